package server

import (
	"context"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/config"
	"github.com/prsaga/prsaga/platform/httpx"
	"github.com/prsaga/prsaga/platform/service"
	"github.com/prsaga/prsaga/platform/telemetry"
	"github.com/prsaga/prsaga/services/ledger"
	ledgerydb "github.com/prsaga/prsaga/services/ledger/ydb"
)

// Module is the ledger as a process assembles it: the projection, the API
// and dashboard, the saga gauges and the watchdog.
var Module = service.Module{
	Name:   contracts.ServiceLedger,
	SQLite: Migrations,
	YDB:    ledgerydb.Migrations,
	Build: func(ctx context.Context, env service.Env) (service.Component, error) {
		cfg := env.Config
		srv, err := New(Options{DB: env.DB, OperatorTokens: httpx.Tokens{cfg.APIToken}, TokenNames: []string{"operator"},
			ReadTokens: httpx.Tokens{cfg.ReadToken}, Bus: env.Bus, Watchdog: WatchdogConfig(cfg, env.StepBudgets),
			Log: env.Log, Metrics: env.Telemetry})
		if err != nil {
			return nil, err
		}
		env.Telemetry.WatchSagas(sagaStates(srv.StateCounts))
		stop, err := srv.StartWatchdog()
		if err != nil {
			return nil, err
		}
		env.OnClose(func() error { stop(); return nil })
		if stop := srv.StartBodyRetention(ledger.BodyRetention{Keep: cfg.RetentionEventBodies, Interval: cfg.PruneInterval,
			Pruned: func(n int64) { env.Telemetry.Pruned(contracts.ServiceLedger, "saga_event_body", n) }}); stop != nil {
			env.OnClose(func() error { stop(); return nil })
		}
		return srv, nil
	},
}

// WatchdogConfig is the watchdog's configuration from the process's:
// budgets are the StepBudgets of every module of the deployment.
func WatchdogConfig(cfg config.Config, budgets map[contracts.State]time.Duration) ledger.WatchdogConfig {
	return ledger.WatchdogConfig{
		Interval:       cfg.WatchdogInterval,
		Batch:          cfg.WatchdogBatch,
		Timeouts:       ledger.Timeouts(cfg.StepTimeouts),
		DeliveryBudget: cfg.DeliveryBudget(),
		StepBudgets:    budgets,
	}
}

func sagaStates(counts func(context.Context) (map[contracts.State]ledger.StateCount, error)) telemetry.SagaStates {
	return func(ctx context.Context) (map[contracts.State]telemetry.StateCount, error) {
		in, err := counts(ctx)
		if err != nil {
			return nil, err
		}
		out := make(map[contracts.State]telemetry.StateCount, len(in))
		for st, c := range in {
			out[st] = telemetry.StateCount{Sagas: c.Sagas, Oldest: c.Oldest}
		}
		return out, nil
	}
}
