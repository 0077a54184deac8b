package runner_test

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/runner"
	"github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/platform/store"
)

// A consumer whose handler does nothing outside its commit leaves the
// inbox check to the commit's inbox insert: no read before the handler,
// and still one committed effect per event id — for copies delivered
// together, copies delivered later, an id handled before, and a
// redelivery after a crash that followed the commit. Both handler shapes.
func TestInCommitOnlyChecksTheInboxAtCommit(t *testing.T) {
	for _, batch := range []bool{false, true} {
		t.Run(fmt.Sprintf("batch=%v", batch), func(t *testing.T) {
			var counting *countingStore
			var faults atomic.Int64
			h := start(t, setup{batch: batch,
				bus: bus.Config{AckWait: 500 * time.Millisecond},
				fault: func(point string, env contracts.Envelope) error {
					if point == runner.FaultAfterCommit && env.Event.ID() == "crash" && faults.Add(1) == 1 {
						return errors.New("crash after commit")
					}
					return nil
				},
				tune: func(cfg *runner.Config) {
					counting = &countingStore{DB: cfg.Store.(*sqlite.DB)}
					cfg.Store = counting
					cfg.InCommitOnly = true
				}})
			if err := h.db.Update(h.ctx(), func(tx store.Tx) error {
				_, err := tx.MarkProcessed(h.durable, "seeded")
				return err
			}); err != nil {
				t.Fatal(err)
			}
			h.publishAs(requested(t, "seeded", validRequest()), "seeded-1")
			h.publishAs(requested(t, "twice", validRequest()), "twice-1")
			h.publishAs(requested(t, "twice", validRequest()), "twice-2")
			h.settled(h.publishAs(requested(t, "crash", validRequest()), "crash-1"))
			h.waitFor("the crashed commit's redelivery settled", func() bool {
				ci := h.consumer()
				return faults.Load() == 1 && ci.NumAckPending == 0 && ci.NumRedelivered == 0
			})
			h.settled(h.publishAs(requested(t, "twice", validRequest()), "twice-late"))
			for id, want := range map[string]int{"seeded": 0, "twice": 1, "crash": 1} {
				if got := h.committedEffects(id); got != want {
					t.Errorf("committed effects of %s: got %d, want %d", id, got, want)
				}
			}
			if n := len(h.outgoing(contracts.SubjectMergeValidated)); n != 2 {
				t.Errorf("validated events: got %d, want 2 (twice and crash, once each)", n)
			}
			if one, any := counting.one.Load(), counting.any.Load(); one+any != 0 {
				t.Errorf("inbox reads before the handler: %d single, %d batched; want none", one, any)
			}
		})
	}
}
