package bench

import (
	"context"
	"sync"
)

// group runs functions with bounded parallelism and keeps the first error;
// after an error the context passed to the rest is cancelled.
type group struct {
	ctx    context.Context
	cancel context.CancelFunc
	sem    chan struct{}
	wg     sync.WaitGroup
	once   sync.Once
	err    error
}

func newGroup(ctx context.Context, limit int) *group {
	ctx, cancel := context.WithCancel(ctx)
	return &group{ctx: ctx, cancel: cancel, sem: make(chan struct{}, limit)}
}

// Go runs f once a slot is free (or not at all once the group failed).
func (g *group) Go(f func(ctx context.Context) error) {
	select {
	case g.sem <- struct{}{}:
	case <-g.ctx.Done():
		g.fail(g.ctx.Err())
		return
	}
	g.wg.Add(1)
	go func() {
		defer func() { <-g.sem; g.wg.Done() }()
		if err := f(g.ctx); err != nil {
			g.fail(err)
		}
	}()
}

func (g *group) fail(err error) {
	g.once.Do(func() { g.err = err; g.cancel() })
}

// Wait waits for every function and returns the first error.
func (g *group) Wait() error {
	g.wg.Wait()
	g.cancel()
	return g.err
}
