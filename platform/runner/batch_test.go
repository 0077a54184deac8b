package runner_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/runner"
	"github.com/prsaga/prsaga/platform/sqlite/sqlitetest"
)

// gate blocks the side effect of the first event until opened, so that the
// events published behind it queue up and form one batch.
type gate struct {
	once    sync.Once
	entered chan struct{}
	open    chan struct{}
}

func newGate() *gate { return &gate{entered: make(chan struct{}), open: make(chan struct{})} }

func (g *gate) effect(ctx context.Context, env contracts.Envelope) error {
	first := false
	g.once.Do(func() { first = true; close(g.entered) })
	if first {
		select {
		case <-g.open:
		case <-ctx.Done():
		}
	}
	return nil
}

// publishN publishes events ids[0..n) for distinct PRs; it returns the
// last stream sequence.
func (h *harness) publishN(prefix string, n int) (ids []string, last uint64) {
	h.t.Helper()
	for i := 0; i < n; i++ {
		r := validRequest()
		r.PRNumber = i + 1
		r.PRID = contracts.PRID(r.Repo, r.PRNumber)
		id := fmt.Sprintf("%s-%d", prefix, i)
		ids = append(ids, id)
		last = h.publish(requested(h.t, id, r))
	}
	return ids, last
}

// commitTimes returns the inbox processed_at of each event: one
// transaction stamps all its units with one time.
func (h *harness) commitTimes(ids []string) map[string]int64 {
	h.t.Helper()
	out := map[string]int64{}
	for _, id := range ids {
		var at int64
		if err := h.db.Reader().QueryRow(`SELECT processed_at FROM inbox WHERE consumer = ? AND event_id = ?`, h.durable, id).Scan(&at); err != nil {
			h.t.Fatalf("inbox row of %s: %v", id, err)
		}
		out[id] = at
	}
	return out
}

func TestBatchCommitsEachOutcomeOnItsOwn(t *testing.T) {
	g := newGate()
	var b5runs atomic.Int64
	h := start(t, setup{
		workers: 1,
		effect: func(ctx context.Context, env contracts.Envelope) error {
			if env.Event.ID() == "b-5" {
				b5runs.Add(1)
			}
			return g.effect(ctx, env)
		},
		tune: func(c *runner.Config) { c.BatchWindow = 10 * time.Second },
		// The commit of b-5's first delivery fails however often the store
		// runs it; its redelivery commits.
		commitErr: func(env contracts.Envelope) error {
			if env.Event.ID() == "b-5" && b5runs.Load() == 1 {
				return errors.New("unit 5 fails on its first delivery")
			}
			return nil
		},
	})
	h.publish(requested(t, "b-first", validRequest()))
	<-g.entered
	ids, last := h.publishN("b", 10)
	h.waitFor("the 10 events to be delivered behind the first", func() bool {
		info := h.consumer()
		return info.Delivered.Stream >= last
	})
	close(g.open)
	h.settled(last)

	for _, id := range append([]string{"b-first"}, ids...) {
		if n := h.committedEffects(id); n != 1 {
			t.Errorf("committed effects of %s: got %d, want 1", id, n)
		}
	}
	if out := h.outgoing(contracts.SubjectMergeValidated); len(out) != 11 {
		t.Errorf("validated events: got %d, want 11", len(out))
	}
	times := h.commitTimes(ids)
	batch := map[int64]int{}
	for id, at := range times {
		if id != "b-5" {
			batch[at]++
		}
	}
	// Normally one batch; a message still on its way from the client's
	// subscription to the worker when the batch closes starts another.
	if len(batch) > 3 {
		t.Errorf("the 9 events that did not fail were committed in %d transactions, want them batched: %v", len(batch), times)
	}
	if _, together := batch[times["b-5"]]; together {
		t.Error("b-5 failed in the batch but its retry has the batch's commit time")
	}
	if n := h.calls.Load(); n != 12 {
		t.Errorf("handler runs: got %d, want 12 (11 events, b-5 twice)", n)
	}
}

func TestOneWorkerCommitsInDeliveryOrder(t *testing.T) {
	h := start(t, setup{workers: 1})
	ids, last := h.publishN("o", 40)
	h.settled(last)
	got := sqlitetest.Column(t, t.Context(), h.db.Reader(), `SELECT event_id FROM effects ORDER BY rowid`)
	if fmt.Sprint(got) != fmt.Sprint(ids) {
		t.Errorf("commit order:\n got %v\nwant %v", got, ids)
	}
}

func TestBatchHandlerGetsWhatIsWaiting(t *testing.T) {
	g := newGate()
	var failed atomic.Bool
	h := start(t, setup{
		workers: 1,
		batch:   true,
		effect: func(ctx context.Context, env contracts.Envelope) error {
			if err := g.effect(ctx, env); err != nil {
				return err
			}
			if env.Event.ID() == "h-3" && failed.CompareAndSwap(false, true) {
				return errTransient
			}
			return nil
		},
	})
	h.publish(requested(t, "h-first", validRequest()))
	<-g.entered
	ids, last := h.publishN("h", 10)
	h.waitFor("the 10 events to be delivered behind the first", func() bool { return h.consumer().Delivered.Stream >= last })
	close(g.open)
	h.settled(last)
	for _, id := range append([]string{"h-first"}, ids...) {
		if n := h.committedEffects(id); n != 1 {
			t.Errorf("committed effects of %s: got %d, want 1", id, n)
		}
	}
	// The first call had the first event alone; the ten behind it came in
	// one call (or two, if one was still on its way to the worker); h-3's
	// failure retried it alone.
	if n := h.batches.Load(); n < 3 || n > 4 {
		t.Errorf("batch handler calls: got %d, want 3", n)
	}
	if n := h.calls.Load(); n != 12 {
		t.Errorf("events handled: got %d, want 12 (h-3 twice)", n)
	}
}

// With BatchLinger a batch handler's worker waits for more messages: the
// five published one after another, each after the worker has the ones
// before, come in one call, handed over as soon as the batch is full.
func TestBatchLingerWaitsForMore(t *testing.T) {
	h := start(t, setup{workers: 1, batch: true, tune: func(cfg *runner.Config) {
		cfg.Batch, cfg.BatchLinger = 5, time.Minute
	}})
	var last uint64
	for i := range 5 {
		last = h.publish(requested(t, fmt.Sprintf("l-%d", i), validRequest()))
		h.waitFor("the event to be delivered", func() bool { return h.consumer().Delivered.Stream >= last })
	}
	h.settled(last)
	if n := h.batches.Load(); n != 1 {
		t.Errorf("batch handler calls: got %d, want 1 (all five together)", n)
	}
	if n := h.calls.Load(); n != 5 {
		t.Errorf("events handled: got %d, want 5", n)
	}
}

// A lingering worker hands a batch that does not fill over when the
// linger ends, and a runner stopped while it lingers stops at once.
func TestBatchLingerEnds(t *testing.T) {
	h := start(t, setup{workers: 1, batch: true, tune: func(cfg *runner.Config) {
		cfg.BatchLinger = 50 * time.Millisecond
	}})
	last := h.publish(requested(t, "e-0", validRequest()))
	h.settled(last)
	if n := h.committedEffects("e-0"); n != 1 {
		t.Errorf("committed effects of e-0: got %d, want 1", n)
	}

	lingering := make(chan struct{})
	var once sync.Once
	defer runner.OnLinger(func() { once.Do(func() { close(lingering) }) })()
	h = start(t, setup{workers: 1, batch: true, tune: func(cfg *runner.Config) {
		cfg.BatchLinger = time.Hour
	}})
	h.publish(requested(t, "s-0", validRequest()))
	select { // the worker holds the event and waits for more
	case <-lingering:
	case <-time.After(30 * time.Second):
		t.Fatal("the worker never lingered")
	}
	stopped := make(chan struct{})
	go func() { h.r.Stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(30 * time.Second):
		t.Fatal("Stop did not return while the worker lingered")
	}
	if n := h.calls.Load(); n != 1 {
		t.Errorf("events handled: got %d, want 1 (the lingering batch is handed over on Stop)", n)
	}
}

// Events the consumer skips are acknowledged unhandled — no handler run,
// no inbox row, no effect — and the others are handled as before, by a
// handler and by a batch handler alike.
func TestSkippedEventsAreAcknowledgedUnhandled(t *testing.T) {
	for _, batch := range []bool{false, true} {
		t.Run(fmt.Sprintf("batch=%v", batch), func(t *testing.T) {
			h := start(t, setup{batch: batch, workers: 1, tune: func(cfg *runner.Config) {
				cfg.Skip = func(env contracts.Envelope) bool { return strings.HasPrefix(env.Event.ID(), "skip-") }
			}})
			h.publish(requested(t, "skip-1", validRequest()))
			h.publish(requested(t, "keep-1", validRequest()))
			last := h.publish(requested(t, "skip-2", validRequest()))
			h.settled(last) // every one acknowledged
			for _, id := range []string{"skip-1", "skip-2"} {
				if h.processed(id) {
					t.Errorf("%s has an inbox row", id)
				}
				if n := h.committedEffects(id); n != 0 {
					t.Errorf("committed effects of %s: got %d, want 0", id, n)
				}
			}
			if n := h.committedEffects("keep-1"); n != 1 {
				t.Errorf("committed effects of keep-1: got %d, want 1", n)
			}
			if n := h.calls.Load(); n != 1 {
				t.Errorf("handler runs: got %d, want 1 (keep-1 only)", n)
			}
		})
	}
}
