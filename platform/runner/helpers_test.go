package runner_test

import (
	"context"
	"sync"
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
			o := newOverlap()
			h := start(t, setup{
				workers: 4,
				effect:  o.effect,
				tune:    func(cfg *runner.Config) { cfg.HelpAfter = c.helpAfter },
			})
			_, last := h.publishN("fast", 20)
			h.settled(last)
			if m := o.most.Load(); c.overlap != (m > 1) {
				t.Errorf("side effects ran %d at once; want overlap %v", m, c.overlap)
			}
		})
	}
}

// overlap records how many side effects ran at once, at most. Each side
// effect waits, up to a deadline, for another to run beside it: with
// workers that may overlap, they do at once; without, every one waits out
// its deadline alone.
type overlap struct {
	running, most atomic.Int32
	once          sync.Once
	both          chan struct{} // closed when two ran at once
}

func newOverlap() *overlap { return &overlap{both: make(chan struct{})} }

func (o *overlap) effect(ctx context.Context, env contracts.Envelope) error {
	n := o.running.Add(1)
	defer o.running.Add(-1)
	for {
		m := o.most.Load()
		if n <= m || o.most.CompareAndSwap(m, n) {
			break
		}
	}
	if n > 1 {
		o.once.Do(func() { close(o.both) })
	}
	select {
	case <-o.both:
	case <-time.After(25 * time.Millisecond):
	case <-ctx.Done():
	}
	return nil
}
