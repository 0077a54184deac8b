package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/outbox"
	"github.com/prsaga/prsaga/services/ledger"
)

// WatchdogOnce runs one watchdog tick and publishes the timed_out events it
// emitted through pub before returning, for a process that runs only that
// tick (prsaga watchdog --once under cron or a scheduled function) and
// exits: nothing is left in the outbox for a relay that may not run for a
// while. Beside running ledgers and other schedulers it is as safe as a
// tick of theirs — a row moves once (design §4). A tick skipped because
// the bus or the store does not answer is an error.
func (s *Server) WatchdogOnce(ctx context.Context, pub outbox.Publisher) (ledger.TickResult, error) {
	if s.watchdog == nil {
		return ledger.TickResult{}, errors.New("ledger: the watchdog needs Options.Bus")
	}
	res, err := s.watchdog.Tick(ctx)
	if err != nil {
		return res, err
	}
	if res.Skipped != "" {
		return res, fmt.Errorf("tick skipped: %s", res.Skipped)
	}
	relay := &outbox.Relay{Store: s.db, Pub: pub, Log: s.log.With("component", "relay"), Service: contracts.ServiceLedger}
	for {
		n, err := relay.Flush(ctx)
		if err != nil {
			return res, fmt.Errorf("publish the timed_out events: %w (the ledger's relay sends them when it runs)", err)
		}
		if n == 0 {
			return res, nil
		}
	}
}
