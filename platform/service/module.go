package service

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/config"
	"github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/platform/store"
	"github.com/prsaga/prsaga/platform/telemetry"
	"github.com/prsaga/prsaga/platform/ydb"
)

// Module is one service as a process assembles it: its name, its tables
// on each store, and how to build it from what the process provides. The
// process (cmd/prsaga's stack) ranges over a list of modules; adding a
// service means adding a module there, nothing else.
type Module struct {
	Name   string
	SQLite sqlite.Migrations // the service's own tables (inbox and outbox come with every store)
	YDB    ydb.Migrations
	// StepBudgets is how much longer than the delivery budget a step of this
	// service may legitimately take (the notifier's webhook retries): the
	// ledger's watchdog allows for it, wherever the service runs.
	StepBudgets map[contracts.State]time.Duration
	Build       func(ctx context.Context, env Env) (Component, error)
}

// Env is what a process gives a module to build it with.
type Env struct {
	DB        store.DB // the module's store, opened with its migrations
	Config    config.Config
	Bus       *bus.Bus
	Log       *slog.Logger
	Telemetry *telemetry.Telemetry
	// StepBudgets of every module of the deployment (Module.StepBudgets).
	StepBudgets map[contracts.State]time.Duration
	// OnClose registers f to run when the process stops, after the
	// module's consumers have stopped.
	OnClose func(f func() error)
}

// Component is a built module: what its consumers are. It may also serve
// HTTP routes, report readiness or stand by (interfaces the stack checks).
type Component interface {
	Spec() Spec
}

// Tables picks a service's adapter for the store the process opened — the
// one place that knows the concrete store types, so that a service lists
// its adapters instead of switching on types.
type Tables[T any] struct {
	SQLite func(*sqlite.DB) T
	YDB    func(*ydb.DB) T
}

// For returns the adapter for db.
func (t Tables[T]) For(db store.DB) (T, error) {
	var zero T
	switch db := db.(type) {
	case *sqlite.DB:
		if t.SQLite != nil {
			return t.SQLite(db), nil
		}
	case *ydb.DB:
		if t.YDB != nil {
			return t.YDB(db), nil
		}
	}
	return zero, fmt.Errorf("no tables for a store of type %T", db)
}
