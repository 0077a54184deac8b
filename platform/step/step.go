// Package step is the contract between a service's domain and the runner
// that drives it (design §5): what a handler returns, and how events get
// their ids. It names no transport and no database, so that a service's
// root package — its domain — can depend on it without linking NATS or a
// SQL driver (the layout test in cmd/prsaga checks this with go list -deps).
package step

import (
	"context"
	"log/slog"

	"github.com/google/uuid"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/store"
)

// Commit is the part of handling that runs inside the transaction: the
// service's own state changes and its outgoing events (tx.Emit). It may run
// more than once and must have no side effects outside tx.
type Commit func(tx store.Tx) error

// Handler handles one event. It runs the step's side effect — idempotently,
// checking the world first, since a crash may repeat it — and returns the
// Commit. An error means "try again later": the message is Nak'ed with
// backoff and redelivered.
type Handler func(ctx context.Context, env contracts.Envelope, log *slog.Logger) (Commit, error)

// BatchHandler handles several events in one call, for a side effect that
// is much cheaper in bulk (one search-index write for many documents). It
// returns one Commit and one error per event, in the order given: an error
// retries that event alone. Like a Handler it runs outside any transaction
// and must be idempotent; logs[i] is envs[i]'s logger.
type BatchHandler func(ctx context.Context, envs []contracts.Envelope, logs []*slog.Logger) ([]Commit, []error)

// NewID returns a new event id (UUIDv7: time-ordered, so ids sort by creation).
func NewID() string { return uuid.Must(uuid.NewV7()).String() }
