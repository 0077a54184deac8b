package sqlite

import (
	"context"
	"errors"
	"sync"

	"github.com/prsaga/prsaga/platform/store"
)

// request is one UpdateEach call waiting for, or in, a group commit.
type request struct {
	ctx context.Context
	fns []func(tx store.Tx) error
	// Set by the commit: the outcome, or the value a fn of this call
	// panicked with.
	errs     []error
	err      error
	panicked any
	txs      []*Tx
	after    []func() // the committed units' AfterCommit functions
	// wake is closed when the request is done or must lead (lead).
	wake chan struct{}
	lead bool
}

// errPanicked aborts a group's transaction when a fn panics; the callers
// whose fns did not panic get errOtherPanicked.
var (
	errPanicked      = errors.New("a unit panicked")
	errOtherPanicked = errors.New("transaction rolled back: a unit of another caller in it panicked")
)

// call runs fn, recording a panic as the request's own before aborting the
// whole transaction with it.
func (r *request) call(fn func(tx store.Tx) error, tx *Tx) error {
	defer func() {
		if p := recover(); p != nil {
			r.panicked = p
			panic(errPanicked)
		}
	}()
	return fn(tx)
}

// group commits concurrent UpdateEach calls together. SQLite has one
// writer: while one transaction runs, the calls that arrive queue up, and
// the next transaction takes them all — one begin, one commit and one
// write of each touched page for all of them instead of one per call.
// The caller that finds no transaction running leads: it commits its own
// request and everything queued meanwhile, then hands the lead to the
// first request queued after that (which again takes the whole queue).
type group struct {
	mu      sync.Mutex
	leading bool
	queue   []*request
}

func (g *group) run(req *request, commit func([]*request)) {
	g.mu.Lock()
	if g.leading {
		req.wake = make(chan struct{})
		g.queue = append(g.queue, req)
		g.mu.Unlock()
		<-req.wake
		if !req.lead {
			return
		}
		g.mu.Lock()
	}
	g.leading = true
	batch := append([]*request{req}, g.queue...)
	g.queue = nil
	g.mu.Unlock()

	defer g.handOff()
	defer func() {
		if p := recover(); p != nil {
			if p != errPanicked {
				req.panicked = p // the platform's own bug, not a fn's
			}
			for _, r := range batch {
				if r.panicked == nil {
					r.errs, r.err = nil, errOtherPanicked
				}
			}
		}
		for _, r := range batch {
			r.txs = nil
			if r != req {
				close(r.wake)
			}
		}
	}()
	commit(batch)
}

// handOff passes the lead to the first queued request, or ends it.
func (g *group) handOff() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.queue) == 0 {
		g.leading = false
		return
	}
	next := g.queue[0]
	g.queue = g.queue[1:]
	next.lead = true
	close(next.wake)
}
