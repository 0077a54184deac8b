package runner_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/runner"
)

// A side effect that hangs holds its worker, not the consumer: once its
// batch has run for HelpAfter, another worker takes the messages behind
// it, and they commit while it still hangs.
func TestHelpersTakeOverFromAStalledBatch(t *testing.T) {
	g := newGate()
	h := start(t, setup{
		workers: 4,
		effect:  g.effect,
		tune:    func(c *runner.Config) { c.HelpAfter = 20 * time.Millisecond },
	})
	defer close(g.open)
	h.publish(requested(t, "stall-first", validRequest()))
	<-g.entered
	ids, _ := h.publishN("behind", 10)
	h.waitFor("the 10 events behind the hanging one to commit", func() bool {
		for _, id := range ids {
			if h.committedEffects(id) != 1 {
				return false
			}
		}
		return true
	})
	if h.committedEffects("stall-first") != 0 {
		t.Error("the hanging event committed before its side effect returned")
	}
}

// Fast side effects stay with one worker, batched, however many workers
// are allowed: no batch runs long enough to call for help.
func TestFastStepsStayWithOneWorker(t *testing.T) {
	for _, c := range []struct {
		name      string
		helpAfter time.Duration
		overlap   bool
	}{
		{"helpers wait", time.Minute, false},
		// Every worker taking messages at once overlaps: what the case
		// above would see if helpers did not wait.
		{"no waiting", -1, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var o overlap
			h := start(t, setup{
				workers: 4,
				effect:  o.effect,
				tune:    func(cfg *runner.Config) { cfg.HelpAfter = c.helpAfter },
			})
			_, last := h.publishN("fast", 40)
			h.settled(last)
			if m := o.most.Load(); c.overlap != (m > 1) {
				t.Errorf("side effects ran %d at once; want overlap %v", m, c.overlap)
			}
		})
	}
}

// overlap records how many side effects ran at once, at most.
type overlap struct{ running, most atomic.Int32 }

// effect takes a moment (room for others to overlap it) and records.
func (o *overlap) effect(ctx context.Context, env contracts.Envelope) error {
	n := o.running.Add(1)
	defer o.running.Add(-1)
	for {
		m := o.most.Load()
		if n <= m || o.most.CompareAndSwap(m, n) {
			break
		}
	}
	time.Sleep(time.Millisecond) // the side effect's own duration, not a wait for anything
	return nil
}
