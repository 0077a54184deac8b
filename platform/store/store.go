package store

import (
	"context"
	"errors"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
)

// Tx is one open write transaction of a service's database: the service's
// own statements (through its adapter), the inbox and the outbox commit or
// roll back together.
//
// The function that receives a Tx may run more than once — SQLite retries
// lock contention, YDB's DoTx retries the whole function on optimistic-lock
// conflicts — so it must have no side effects outside the transaction; what
// should happen once, after the commit, goes to AfterCommit. A Tx is bound
// to its function's call and is not safe for concurrent use.
type Tx interface {
	// Context is the transaction's context: pass it to every statement.
	Context() context.Context
	// Now is when the transaction (this attempt of it) started, by the
	// store's clock.
	Now() time.Time
	// Emit appends events to the outbox; the relay publishes them after
	// commit. An event whose id is already in the outbox is kept as it is.
	Emit(evs ...*event.Event) error
	// MarkProcessed records that consumer handled eventID. first is false
	// when it was already recorded (a duplicate delivery); the transaction
	// stays usable either way.
	MarkProcessed(consumer, eventID string) (first bool, err error)
	// AfterCommit registers f to run once, after the transaction committed
	// (logs, metrics). Nothing registered by an attempt that rolled back
	// runs.
	AfterCommit(f func())
}

// DB is a service's database as the platform uses it. Implementations are
// safe for concurrent use.
type DB interface {
	// Update runs fn in one serializable write transaction and commits
	// when it returns nil; fn's error is returned as it is (errors.Is
	// works). fn may run more than once: see Tx.
	Update(ctx context.Context, fn func(tx Tx) error) error
	// Processed reports whether consumer already handled eventID.
	Processed(ctx context.Context, consumer, eventID string) (bool, error)
	// ExpireInbox deletes inbox rows processed more than olderThan ago and
	// returns how many it deleted. Rows must be kept at least as long as
	// the stream keeps messages.
	ExpireInbox(ctx context.Context, olderThan time.Duration) (int64, error)

	// Unsent lists up to limit unsent outbox rows, oldest first. There is
	// no cursor: a row committed late by a slow transaction (with an older
	// created_at) is found by the next call.
	Unsent(ctx context.Context, limit int) ([]OutboxRow, error)
	// MarkSent marks rows published. Unknown or already-sent ids are
	// ignored: marking twice is harmless.
	MarkSent(ctx context.Context, ids []string) error
	// Committed is signalled (without blocking) after a transaction of this
	// process that emitted events has committed: the relay's wake-up.
	// Commits of other processes are found by the relay's poll.
	Committed() <-chan struct{}
	// OutboxStats reports unsent rows and the age of the oldest.
	OutboxStats(ctx context.Context) (pending int, oldest time.Duration, err error)

	// Now is the store's clock.
	Now() time.Time
	// Close releases the database. Safe to call more than once.
	Close() error
}

// ErrWrongTx is returned (wrapped) by a service adapter handed a Tx of
// another store than its own: a wiring mistake.
var ErrWrongTx = errors.New("transaction of another store")
