package stack

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/prsaga/prsaga/platform/service"
	"github.com/prsaga/prsaga/services/indexer"
)

// activator is a component that may start as a standby (the indexer, when
// another one holds the index): its consumers and relay must not run until
// it is active — a standby's consumer would take events it cannot handle.
type activator interface {
	Active() bool
	AwaitActive(ctx context.Context) error
}

// standbys are the components of a stack waiting to become active.
type standbys struct {
	mu       sync.Mutex
	wg       sync.WaitGroup
	ctx      context.Context
	cancel   context.CancelFunc
	stopping bool
}

// startWhenActive starts comp's service once it is active, in the
// background: the stack (and its /readyz, saying why it is not ready)
// runs meanwhile.
func (s *Stack) startWhenActive(comp service.Component, a activator, log *slog.Logger, opts service.Options) {
	sb := &s.standbys
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if sb.ctx == nil {
		sb.ctx, sb.cancel = context.WithCancel(context.Background())
	}
	log.Info("standby: waiting to become active", "reason", errString(readyErr(comp)))
	sb.wg.Add(1)
	go func() {
		defer sb.wg.Done()
		if err := a.AwaitActive(sb.ctx); err != nil {
			if !errors.Is(err, context.Canceled) && !errors.Is(err, indexer.ErrClosed) {
				log.Error("standby: cannot become active", "err", err)
			}
			return
		}
		sb.mu.Lock()
		defer sb.mu.Unlock()
		if sb.stopping {
			return
		}
		run, err := service.Start(sb.ctx, comp.Spec(), s.Bus, log, opts)
		if err != nil {
			log.Error("standby: took over but cannot start", "err", err)
			return
		}
		s.running = append(s.running, run)
		log.Info("active: took over")
	}()
}

// stopStandbys ends the waits and returns once no standby can start any
// more; the services it started are in s.running.
func (s *Stack) stopStandbys() {
	sb := &s.standbys
	sb.mu.Lock()
	sb.stopping = true
	if sb.cancel != nil {
		sb.cancel()
	}
	sb.mu.Unlock()
	sb.wg.Wait()
}

func readyErr(comp service.Component) error {
	if r, ok := comp.(readier); ok {
		return r.Ready()
	}
	return nil
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
