package stack

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/config"
	"github.com/prsaga/prsaga/platform/service"
	ledgerdomain "github.com/prsaga/prsaga/services/ledger"

	indexer "github.com/prsaga/prsaga/services/indexer/server"
	ledger "github.com/prsaga/prsaga/services/ledger/server"
	merger "github.com/prsaga/prsaga/services/merger/server"
	notifier "github.com/prsaga/prsaga/services/notifier/server"
	validator "github.com/prsaga/prsaga/services/validator/server"
)

// Modules are the services a process can run, in saga order, ledger last
// (it starts its watchdog once the others are up). The one list: names,
// tables, schema and building all range over it.
var Modules = []service.Module{validator.Module, merger.Module, notifier.Module, indexer.Module, ledger.Module}

// AllServices are the modules' names, in the same order.
var AllServices = func() []string {
	names := make([]string, len(Modules))
	for i, m := range Modules {
		names[i] = m.Name
	}
	return names
}()

func module(name string) (service.Module, bool) {
	for _, m := range Modules {
		if m.Name == name {
			return m, true
		}
	}
	return service.Module{}, false
}

// stepBudgets are the StepBudgets of every module, whichever of them this
// process runs: the watchdog allows for a step wherever it runs.
func stepBudgets() map[contracts.State]time.Duration {
	out := map[contracts.State]time.Duration{}
	for _, m := range Modules {
		for st, d := range m.StepBudgets {
			out[st] = d
		}
	}
	return out
}

// build opens the named module's store and builds it.
func (s *Stack) build(ctx context.Context, name string, log *slog.Logger) (service.Component, error) {
	m, ok := module(name)
	if !ok {
		return nil, fmt.Errorf("unknown service %q", name)
	}
	db, err := s.openDB(ctx, name)
	if err != nil {
		return nil, err
	}
	return m.Build(ctx, service.Env{
		DB: db, Config: s.cfg, Bus: s.Bus, Log: log, Telemetry: s.Telemetry,
		StepBudgets: stepBudgets(),
		OnClose:     func(f func() error) { s.closers = append(s.closers, f) },
	})
}

// LedgerWatchdog is the ledger's watchdog configuration for cfg, with the
// step budgets of every module.
func LedgerWatchdog(cfg config.Config) ledgerdomain.WatchdogConfig {
	return ledger.WatchdogConfig(cfg, stepBudgets())
}
