package runner_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/runner"
)

// Two copies of one event id with different bodies, published back to
// back (a client reusing an id outside JetStream's dedupe): with four
// workers the first body must win, as it does in a consumer with one
// worker. The first copy's side effect holds on until the second copy's
// handler starts — which, when copies race, happens at once and lets the
// second commit first; when the runner orders them, it never happens and
// the hold ends after a while.
func TestCopiesOfOneIDAreHandledInDeliveryOrder(t *testing.T) {
	for _, batch := range []bool{false, true} {
		t.Run(fmt.Sprintf("batch handler %v", batch), func(t *testing.T) {
			const ids = 8
			var mu sync.Mutex
			started := map[string]chan struct{}{} // id -> closed when its second copy's handler runs
			startedFor := func(id string) chan struct{} {
				mu.Lock()
				defer mu.Unlock()
				if started[id] == nil {
					started[id] = make(chan struct{})
				}
				return started[id]
			}
			h := start(t, setup{workers: 4, batch: batch,
				tune: func(cfg *runner.Config) { cfg.Batch = 1 },
				effect: func(ctx context.Context, env contracts.Envelope) error {
					ch := startedFor(env.Event.ID())
					if env.Req().PRNumber == 2 {
						close(ch)
						return nil
					}
					select {
					case <-ch:
					case <-time.After(300 * time.Millisecond):
					}
					return nil
				}})
			var last uint64
			for i := 0; i < ids; i++ {
				id := fmt.Sprintf("dup-%d", i)
				for n := 1; n <= 2; n++ {
					last = h.publishCopy(id, n)
				}
			}
			h.settled(last)
			h.checkFirstBodies(ids)
			if n := h.calls.Load(); n != ids {
				t.Errorf("handler runs: %d, want %d (the second copies dropped by the inbox, unhandled)", n, ids)
			}
		})
	}
}

// Copies of many ids interleaved (x1 y1 x2 y2 ...) across workers that
// batch: a worker never waits while holding an uncommitted message, so
// nothing deadlocks, and every id keeps its first body.
func TestInterleavedCopiesDoNotDeadlock(t *testing.T) {
	const ids = 40
	h := start(t, setup{workers: 4})
	var last uint64
	for i := 0; i < ids; i += 2 {
		for n := 1; n <= 2; n++ {
			for _, k := range []int{i, i + 1} {
				last = h.publishCopy(fmt.Sprintf("mix-%d", k), n)
			}
		}
	}
	h.settled(last)
	h.checkFirstBodies(ids)
}

// publishCopy publishes copy n of event id, with the body of PR n (its
// own message id); the stream sequence it got.
func (h *harness) publishCopy(id string, n int) uint64 {
	r := validRequest()
	r.PRID, r.PRNumber = contracts.PRID(r.Repo, n), n
	return h.publishAs(requested(h.t, id, r), fmt.Sprintf("%s-copy%d", id, n))
}

// checkFirstBodies checks that ids events were validated, one per id, each
// answering the body of its first copy (PR 1).
func (h *harness) checkFirstBodies(ids int) {
	h.t.Helper()
	out := h.outgoing(contracts.SubjectMergeValidated)
	if len(out) != ids {
		h.t.Fatalf("validated events: %d, want %d (one per id)", len(out), ids)
	}
	for _, e := range out {
		env, err := contracts.Open(e)
		if err != nil {
			h.t.Fatal(err)
		}
		if env.Req().PRNumber != 1 {
			h.t.Errorf("id %v answered for the second body (PR %d), want the first", e.Extensions()[contracts.ExtCausationID], env.Req().PRNumber)
		}
	}
}
