package validator

import (
	"context"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/prsaga/prsaga/platform/store"
)

// Tx is one open write transaction of the validator's store (the runner's
// commit, or an Update of its own): the validator's tables and the
// service's outbox, committed or rolled back together. It is bound to the
// transaction's context and is not safe for concurrent use; the transaction
// may run more than once (see store.Tx), so callers keep side effects out.
type Tx interface {
	// Statuses returns the latest status of every context of repo@sha,
	// ordered by context; an empty non-nil list when there are none.
	Statuses(repo, sha string) ([]Status, error)
	// PutStatus stores s as the latest status of its context on repo@sha.
	PutStatus(repo, sha string, s Status) error
	// Protection returns the required contexts of repo's branch; ok is
	// false when none are configured (the caller applies its default).
	Protection(repo, branch string) (contexts []string, ok bool, err error)
	// PutProtection replaces the required contexts of repo's branch.
	PutProtection(repo, branch string, contexts []string) error
	// Lock returns the PR's lock; a PR never seen has the zero (free) lock.
	Lock(prID string) (Lock, error)
	// PutLock writes the PR's lock. Call it in the transaction that read
	// the lock: the store makes read-decide-write atomic (SQLite's single
	// writer; YDB's optimistic locks fail the commit of a stale read and
	// the transaction runs again), so two validations of one PR cannot
	// both take it.
	PutLock(prID string, l Lock) error
	// Emit appends events to the outbox; the relay publishes them after
	// commit.
	Emit(evs ...*event.Event) error
	// AfterCommit runs f once the transaction has committed.
	AfterCommit(f func())
}

// Store is the validator's tables on one store (validator/sqlite,
// validator/ydb). Safe for concurrent use.
type Store interface {
	// Bind returns the tables inside tx, an open transaction of the same
	// store; a transaction of another store is an error wrapping
	// store.ErrWrongTx.
	Bind(tx store.Tx) (Tx, error)
	// Statuses, Protection and Lock are Tx's reads, each on its own,
	// outside any transaction (the HTTP API's reads, diagnostics, tests).
	Statuses(ctx context.Context, repo, sha string) ([]Status, error)
	Protection(ctx context.Context, repo, branch string) (contexts []string, ok bool, err error)
	Lock(ctx context.Context, prID string) (Lock, error)
}
