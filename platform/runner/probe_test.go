package runner_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/runner"
	"github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/platform/store"
)

// countingStore is the service's database, counting the runner's inbox
// lookups; failAny makes that many ProcessedAny calls fail first.
type countingStore struct {
	*sqlite.DB
	one, any, maxIDs atomic.Int64
	failAny          atomic.Int64
}

func (s *countingStore) Processed(ctx context.Context, consumer, eventID string) (bool, error) {
	s.one.Add(1)
	return s.DB.Processed(ctx, consumer, eventID)
}

func (s *countingStore) ProcessedAny(ctx context.Context, consumer string, ids []string) (map[string]bool, error) {
	s.any.Add(1)
	for {
		m := s.maxIDs.Load()
		if int64(len(ids)) <= m || s.maxIDs.CompareAndSwap(m, int64(len(ids))) {
			break
		}
	}
	if s.failAny.Add(-1) >= 0 {
		return nil, errors.New("inbox unavailable")
	}
	return s.DB.ProcessedAny(ctx, consumer, ids)
}

// probeRun holds a worker in the first message's side effect until the
// messages published after it are all delivered and waiting, so that the
// next inbox check finds them together.
type probeRun struct {
	h     *harness
	store *countingStore
	hold  chan struct{}
	held  chan struct{} // closed when "first" is in its side effect
	mu    sync.Mutex
	ran   map[string]int // handler runs per event id
}

func startProbeRun(t *testing.T, failAny int64) *probeRun {
	p := &probeRun{hold: make(chan struct{}), held: make(chan struct{}), ran: map[string]int{}}
	var once sync.Once
	p.h = start(t, setup{workers: 1,
		effect: func(ctx context.Context, env contracts.Envelope) error {
			if env.Event.ID() == "first" {
				once.Do(func() { close(p.held) })
				select {
				case <-p.hold:
				case <-time.After(10 * time.Second):
				}
			}
			p.mu.Lock()
			p.ran[env.Event.ID()]++
			p.mu.Unlock()
			return nil
		},
		tune: func(cfg *runner.Config) {
			p.store = &countingStore{DB: cfg.Store.(*sqlite.DB)}
			p.store.failAny.Store(failAny)
			cfg.Store = p.store
		}})
	return p
}

func (p *probeRun) runs(id string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ran[id]
}

// seed records ids in the runner's inbox, as if handled before.
func (p *probeRun) seed(ids ...string) {
	p.h.t.Helper()
	err := p.h.db.Update(p.h.ctx(), func(tx store.Tx) error {
		for _, id := range ids {
			if _, err := tx.MarkProcessed(p.h.durable, id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		p.h.t.Fatal(err)
	}
}

// publishWaiting publishes "first" and waits until it is held in its side
// effect (its inbox check and its batch are done: the others cannot join
// them), then n requests ("w-0".."w-<n-1>") and a copy of "w-1" (another
// message id, same event id), waits until all are delivered and releases
// the hold; it returns the last stream sequence.
func (p *probeRun) publishWaiting(n int) uint64 {
	h := p.h
	r := validRequest()
	h.publish(requested(h.t, "first", r))
	select {
	case <-p.held:
	case <-time.After(15 * time.Second):
		h.t.Fatal("the first message never reached its side effect")
	}
	for i := 0; i < n; i++ {
		r := validRequest()
		r.PRNumber = i + 2
		r.PRID = contracts.PRID(r.Repo, r.PRNumber)
		h.publish(requested(h.t, fmt.Sprintf("w-%d", i), r))
	}
	r.PRNumber = 3
	r.PRID = contracts.PRID(r.Repo, r.PRNumber)
	last := h.publishAs(requested(h.t, "w-1", r), "w-1-copy")
	h.waitFor("every message delivered and waiting", func() bool {
		return h.consumer().NumAckPending == n+2
	})
	close(p.hold)
	return last
}

// The messages waiting behind a busy worker are looked up in the inbox in
// one query, not one each; those it holds are acked without their handler
// running — also a copy of an event handled in the same batch, and copies
// delivered after everything was handled.
func TestInboxCheckOfWaitingMessagesIsOneQuery(t *testing.T) {
	const n = 24
	p := startProbeRun(t, 0)
	h := p.h
	var seeded []string
	for i := 0; i < n; i += 3 {
		seeded = append(seeded, fmt.Sprintf("w-%d", i))
	}
	p.seed(seeded...)
	h.settled(p.publishWaiting(n))

	isSeeded := map[string]bool{}
	for _, id := range seeded {
		isSeeded[id] = true
	}
	check := func(when string) {
		t.Helper()
		for i := 0; i < n; i++ {
			id := fmt.Sprintf("w-%d", i)
			want := 1
			if isSeeded[id] {
				want = 0
			}
			if got := p.runs(id); got != want {
				t.Errorf("%s: handler runs for %s: got %d, want %d", when, id, got, want)
			}
			if got := h.committedEffects(id); got != want {
				t.Errorf("%s: committed effects of %s: got %d, want %d", when, id, got, want)
			}
		}
	}
	check("after the first deliveries")
	if got := p.store.maxIDs.Load(); got < 2 {
		t.Errorf("largest inbox lookup: %d ids, want the waiting messages together", got)
	}
	if one, any := p.store.one.Load(), p.store.any.Load(); one+any >= n {
		t.Errorf("inbox lookups: %d single and %d batched for %d messages; want fewer than one per message", one, any, n+2)
	}

	// Copies delivered later, each in a batch of its own or together.
	var last uint64
	for _, id := range []string{"w-1", "w-2", "w-3", "first"} {
		r := validRequest()
		last = h.publishAs(requested(t, id, r), id+"-late")
	}
	h.settled(last)
	check("after the late copies")
	if got := p.runs("first"); got != 1 {
		t.Errorf("handler runs for first: got %d, want 1", got)
	}
}

// A failed batched lookup retries the message whose check it was; the
// messages it covered ask again on their own. Each is handled once.
func TestFailedInboxProbeLosesNothing(t *testing.T) {
	const n = 10
	p := startProbeRun(t, 1)
	p.seed("w-4")
	p.h.settled(p.publishWaiting(n))
	if p.store.failAny.Load() > 0 {
		t.Fatal("no batched lookup failed: the test did not test it")
	}
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("w-%d", i)
		want := 1
		if id == "w-4" {
			want = 0
		}
		if got := p.runs(id); got != want {
			t.Errorf("handler runs for %s: got %d, want %d", id, got, want)
		}
		if got := p.h.committedEffects(id); got != want {
			t.Errorf("committed effects of %s: got %d, want %d", id, got, want)
		}
	}
}
