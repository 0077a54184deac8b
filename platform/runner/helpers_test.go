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
	var running, most atomic.Int32
	h := start(t, setup{
		workers: 4,
		effect: func(ctx context.Context, env contracts.Envelope) error {
			n := running.Add(1)
			defer running.Add(-1)
			for {
				m := most.Load()
				if n <= m || most.CompareAndSwap(m, n) {
					break
				}
			}
			time.Sleep(time.Millisecond) // a side effect that takes a moment: room for others to overlap
			return nil
		},
		tune: func(c *runner.Config) { c.HelpAfter = time.Minute },
	})
	_, last := h.publishN("fast", 40)
	h.settled(last)
	if m := most.Load(); m != 1 {
		t.Errorf("side effects ran %d at once, want 1 (no batch stalled)", m)
	}
	// The same with every worker taking messages at once (HelpAfter < 0)
	// overlaps: what the test above would see if helpers did not wait.
	running.Store(0)
	most.Store(0)
	h2 := start(t, setup{
		workers: 4,
		effect: func(ctx context.Context, env contracts.Envelope) error {
			n := running.Add(1)
			defer running.Add(-1)
			for {
				m := most.Load()
				if n <= m || most.CompareAndSwap(m, n) {
					break
				}
			}
			time.Sleep(time.Millisecond)
			return nil
		},
		tune: func(c *runner.Config) { c.HelpAfter = -1 },
	})
	_, last = h2.publishN("eager", 40)
	h2.settled(last)
	if m := most.Load(); m < 2 {
		t.Errorf("with HelpAfter < 0 side effects ran %d at once, want several", m)
	}
}
