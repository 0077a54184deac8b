package sqlite

import (
	"fmt"

	psqlite "github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/platform/store"
	"github.com/prsaga/prsaga/services/validator"
)

// Tx is the validator's tables inside a transaction of the SQLite store
// (the runner's, so that the lock commits with the inbox and the outbox).
type Tx struct {
	store.Tx // the platform transaction's Emit and AfterCommit
	tx       *psqlite.Tx
}

var _ validator.Tx = (*Tx)(nil)

// Bind returns the validator's tables inside an open transaction of the
// SQLite store (the runner's); a transaction of another store is an error
// wrapping store.ErrWrongTx.
func (s *Store) Bind(tx store.Tx) (validator.Tx, error) {
	t, ok := tx.(*psqlite.Tx)
	if !ok {
		return nil, fmt.Errorf("validator sqlite adapter given %T: %w", tx, store.ErrWrongTx)
	}
	return &Tx{Tx: t, tx: t}, nil
}

// Statuses returns the latest status of every context of repo@sha.
func (t *Tx) Statuses(repo, sha string) ([]validator.Status, error) {
	return Statuses(t.tx.Context(), t.tx, repo, sha)
}

// PutStatus stores s as the latest status of its context on repo@sha.
func (t *Tx) PutStatus(repo, sha string, s validator.Status) error {
	return PutStatus(t.tx, repo, sha, s)
}

// Protection returns the required contexts of repo's branch.
func (t *Tx) Protection(repo, branch string) ([]string, bool, error) {
	return Protection(t.tx.Context(), t.tx, repo, branch)
}

// PutProtection replaces the required contexts of repo's branch.
func (t *Tx) PutProtection(repo, branch string, contexts []string) error {
	return PutProtection(t.tx, repo, branch, contexts)
}

// Lock returns the PR's lock.
func (t *Tx) Lock(prID string) (validator.Lock, error) { return Lock(t.tx.Context(), t.tx, prID) }

// PutLock writes the PR's lock, in the transaction that read it.
func (t *Tx) PutLock(prID string, l validator.Lock) error { return PutLock(t.tx, prID, l) }
