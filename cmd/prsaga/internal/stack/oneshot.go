package stack

import (
	"context"
	"errors"
	"log/slog"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/config"
	"github.com/prsaga/prsaga/platform/telemetry"
	ledger "github.com/prsaga/prsaga/services/ledger/server"
)

// Ledger builds the ledger alone over cfg's store and the NATS server at
// cfg.NATSURL, without its consumers, relay or watchdog loop: for a verb
// that does one thing and exits (prsaga watchdog --once). It never starts
// an embedded NATS server: one belongs to the process that runs the
// services. s.Stop closes the store and the connection.
func Ledger(ctx context.Context, cfg config.Config, log *slog.Logger) (_ *ledger.Server, _ *Stack, err error) {
	if cfg.NATSURL == "" {
		return nil, nil, errors.New("no NATS URL: set PRSAGA_NATS_URL (or run beside `prsaga dev`)")
	}
	s := &Stack{cfg: cfg, Log: log}
	defer func() {
		if err != nil {
			s.Stop()
		}
	}()
	if s.Telemetry, err = telemetry.New(ctx, telemetry.Config{Log: log}); err != nil {
		return nil, nil, err
	}
	// Unlike a service, a one-shot verb does not wait for its NATS server:
	// nothing to do without it, and its caller (a scheduler) retries.
	if s.Bus, err = bus.Connect(ctx, busConfig(cfg)); err != nil {
		return nil, nil, err
	}
	db, err := s.openDB(ctx, contracts.ServiceLedger)
	if err != nil {
		return nil, nil, err
	}
	srv, err := ledger.New(ledger.Options{DB: db, Bus: s.Bus, Watchdog: LedgerWatchdog(cfg), Log: log})
	if err != nil {
		return nil, nil, err
	}
	return srv, s, nil
}
