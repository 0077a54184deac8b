// Package service composes one prsaga service at run time: its consumers
// (each a runner) and its outbox relay, over its own database.
package service

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/outbox"
	"github.com/prsaga/prsaga/platform/runner"
	"github.com/prsaga/prsaga/platform/step"
	"github.com/prsaga/prsaga/platform/store"
)

// Consumer is one durable consumer of a service and its handler.
type Consumer struct {
	Spec   bus.ConsumerSpec
	Step   contracts.State // the step it performs, for retries_exhausted
	Handle step.Handler
	// HandleBatch, when set, replaces Handle: one call per batch of
	// events (see step.BatchHandler).
	HandleBatch step.BatchHandler
	// Workers overrides Options.Workers for this consumer; 1 handles
	// messages in stream order (the ledger's projection reads best so).
	Workers int
	// Skip is runner.Config.Skip: the events acknowledged unhandled.
	Skip func(env contracts.Envelope) bool
	// BatchLinger is runner.Config.BatchLinger (HandleBatch only): how
	// long a batch waits for more events before its one call.
	BatchLinger time.Duration
	// InCommitOnly is runner.Config.InCommitOnly: the handler does nothing
	// outside its commit.
	InCommitOnly bool
}

// Spec describes a service.
type Spec struct {
	Name string
	// DB is the service's own database (SQLite or YDB): its tables, outbox
	// and inbox.
	DB        store.DB
	Consumers []Consumer
	// Prune are the service's own tables pruned with the inbox and the
	// outbox (SQLite: YDB's tables have TTLs of their own).
	Prune []TablePrune
}

// Options shared by every service of a process.
type Options struct {
	Backoff []time.Duration
	Workers int
	// Fault is every runner's Config.Fault (tests); the named points of
	// package fault work without it.
	Fault func(point string, env contracts.Envelope) error
	// RelayPoll is the relay's safety-net poll interval.
	RelayPoll time.Duration
	// Telemetry, when set, observes every consumer and relay: spans and
	// metrics (telemetry.Telemetry is one). Nil is off.
	Telemetry Telemetry
	// Retention prunes the inbox and sent outbox rows of a store that
	// prunes itself (Pruner) in the background; zero Interval: never.
	Retention Retention
}

// Telemetry observes a service's consumers and its relay.
type Telemetry interface {
	runner.Telemetry
	outbox.Telemetry
}

// Running is a started service; Stop ends it.
type Running struct {
	runners []*runner.Runner
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// Start starts the relay and every consumer of the service.
func Start(ctx context.Context, s Spec, b *bus.Bus, log *slog.Logger, opts Options) (*Running, error) {
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r := &Running{cancel: cancel}
	relay := &outbox.Relay{Store: s.DB, Pub: b, Log: log.With("component", "relay"), Poll: opts.RelayPoll,
		Telemetry: opts.Telemetry, Service: s.Name}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		_ = relay.Run(rctx)
	}()
	// A store without a Pruner (YDB: TTLs prune its inbox and outbox) still
	// runs rounds for the service's own tables.
	if p, ok := s.DB.(Pruner); (ok || len(s.Prune) > 0) && opts.Retention.Interval > 0 {
		ret := opts.Retention
		ret.Tables = append(ret.Tables[:len(ret.Tables):len(ret.Tables)], s.Prune...)
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			prune(rctx, s.Name, p, ret, opts.Telemetry, log.With("component", "prune"))
		}()
	}
	for _, c := range s.Consumers {
		workers := opts.Workers
		if c.Workers > 0 {
			workers = c.Workers
		}
		run, err := runner.Start(ctx, runner.Config{
			Service:      s.Name,
			Consumer:     c.Spec,
			Bus:          b,
			Store:        s.DB,
			Handle:       c.Handle,
			HandleBatch:  c.HandleBatch,
			BatchLinger:  c.BatchLinger,
			Skip:         c.Skip,
			InCommitOnly: c.InCommitOnly,
			Log:          log,
			Step:         c.Step,
			Backoff:      opts.Backoff,
			Workers:      workers,
			Fault:        opts.Fault,
			Telemetry:    opts.Telemetry,
		})
		if err != nil {
			r.Stop()
			return nil, err
		}
		r.runners = append(r.runners, run)
	}
	return r, nil
}

// Stop stops the consumers (letting handlers in progress finish), then the
// relay. Unsent outbox rows stay for the next start.
func (r *Running) Stop() {
	for _, run := range r.runners {
		run.Stop()
	}
	r.cancel()
	r.wg.Wait()
}
