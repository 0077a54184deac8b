package stack

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/config"
	"github.com/prsaga/prsaga/platform/httpx"
	"github.com/prsaga/prsaga/platform/telemetry"
	ledgerdomain "github.com/prsaga/prsaga/services/ledger"

	indexer "github.com/prsaga/prsaga/services/indexer/server"
	ledger "github.com/prsaga/prsaga/services/ledger/server"
	merger "github.com/prsaga/prsaga/services/merger/server"
	notifier "github.com/prsaga/prsaga/services/notifier/server"
	validator "github.com/prsaga/prsaga/services/validator/server"
)

// build opens a service's database and assembles it.
func (s *Stack) build(ctx context.Context, name string, log *slog.Logger) (component, error) {
	cfg := s.cfg
	operator := httpx.Tokens{cfg.APIToken}
	// Reads need the read token or the operator's when either is set.
	readOnly := httpx.Tokens{cfg.ReadToken}
	switch name {
	case "validator":
		db, err := s.openDB(ctx, name)
		if err != nil {
			return nil, err
		}
		return validator.New(validator.Options{
			DB: db, ReposDir: cfg.ReposDir,
			OperatorTokens: operator, StatusTokens: httpx.Tokens{cfg.StatusToken, cfg.APIToken}, ReadTokens: readOnly,
		})
	case "merger":
		db, err := s.openDB(ctx, name)
		if err != nil {
			return nil, err
		}
		return merger.New(merger.Options{DB: db, ReposDir: cfg.ReposDir, Sync: cfg.Durability == "sync"})
	case "notifier":
		db, err := s.openDB(ctx, name)
		if err != nil {
			return nil, err
		}
		n, err := notifier.New(notifier.Options{DB: db, AllowPrivate: cfg.WebhookAllowPrivate, OperatorTokens: operator, ReadTokens: readOnly, Log: log})
		if err != nil {
			return nil, err
		}
		// The step's own retry budget comes on top of the delivery budget
		// (design §4): a shorter timeout would fail a step still working.
		if t, need := cfg.StepTimeouts[contracts.StateNotifying], cfg.DeliveryBudget()+n.RetryBudget(); t <= need {
			return nil, fmt.Errorf("PRSAGA_STEP_TIMEOUT_NOTIFYING: %s must exceed %s (delivery budget + webhook retry budget)", t, need)
		}
		return n, nil
	case "indexer":
		db, err := s.openDB(ctx, name)
		if err != nil {
			return nil, err
		}
		ix, err := indexer.New(indexer.Options{DB: db, IndexDir: filepath.Join(cfg.DataDir, "index"), ReposDir: cfg.ReposDir, Log: log,
			ReadTokens: cfg.ReadTokens()})
		if err != nil {
			return nil, err
		}
		s.closers = append(s.closers, ix.Close)
		return ix, nil
	case "ledger":
		db, err := s.openDB(ctx, name)
		if err != nil {
			return nil, err
		}
		srv, err := ledger.New(ledger.Options{DB: db, OperatorTokens: operator, TokenNames: []string{"operator"}, ReadTokens: readOnly,
			Bus: s.Bus, Watchdog: LedgerWatchdog(cfg), Log: log, Metrics: s.Telemetry})
		if err != nil {
			return nil, err
		}
		s.Telemetry.WatchSagas(sagaStates(srv.StateCounts))
		stop, err := srv.StartWatchdog()
		if err != nil {
			return nil, err
		}
		// Closers run after the services and the bus stop, before the
		// database closes (it was opened first, so it closes last).
		s.closers = append(s.closers, func() error { stop(); return nil })
		return srv, nil
	}
	return nil, fmt.Errorf("unknown service %q", name)
}

// LedgerWatchdog is the ledger's watchdog configuration: the step timeouts
// must exceed the delivery budget plus each step's own retries, which for
// the notifier are its webhook attempts within one delivery (the stack
// runs it with the default webhook configuration).
func LedgerWatchdog(cfg config.Config) ledgerdomain.WatchdogConfig {
	return ledgerdomain.WatchdogConfig{
		Interval:       cfg.WatchdogInterval,
		Batch:          cfg.WatchdogBatch,
		Timeouts:       ledgerdomain.Timeouts(cfg.StepTimeouts),
		DeliveryBudget: cfg.DeliveryBudget(),
		StepBudgets:    map[contracts.State]time.Duration{contracts.StateNotifying: notifier.Options{}.RetryBudget()},
	}
}

// sagaStates reads the ledger's per-state counts for the in-flight gauges.
func sagaStates(counts func(context.Context) (map[contracts.State]ledgerdomain.StateCount, error)) telemetry.SagaStates {
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
