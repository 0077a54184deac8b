package sqlite

import (
	"fmt"

	psqlite "github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/platform/store"
	"github.com/prsaga/prsaga/services/validator"
)

// Tables are the validator's reads and writes inside a transaction of the
// SQLite store (the runner's). The zero value is ready to use.
type Tables struct{}

func txOf(tx store.Tx) (*psqlite.Tx, error) {
	t, ok := tx.(*psqlite.Tx)
	if !ok {
		return nil, fmt.Errorf("validator sqlite adapter given %T: %w", tx, store.ErrWrongTx)
	}
	return t, nil
}

// Statuses returns the latest status of every context of repo@sha.
func (Tables) Statuses(tx store.Tx, repo, sha string) ([]validator.Status, error) {
	t, err := txOf(tx)
	if err != nil {
		return nil, err
	}
	return Statuses(t.Context(), t, repo, sha)
}

// PutStatus stores s as the latest status of its context on repo@sha.
func (Tables) PutStatus(tx store.Tx, repo, sha string, s validator.Status) error {
	t, err := txOf(tx)
	if err != nil {
		return err
	}
	return PutStatus(t, repo, sha, s)
}

// Protection returns the required contexts of repo's branch.
func (Tables) Protection(tx store.Tx, repo, branch string) ([]string, bool, error) {
	t, err := txOf(tx)
	if err != nil {
		return nil, false, err
	}
	return Protection(t.Context(), t, repo, branch)
}

// PutProtection replaces the required contexts of repo's branch.
func (Tables) PutProtection(tx store.Tx, repo, branch string, contexts []string) error {
	t, err := txOf(tx)
	if err != nil {
		return err
	}
	return PutProtection(t, repo, branch, contexts)
}

// Lock returns the PR's lock.
func (Tables) Lock(tx store.Tx, prID string) (validator.Lock, error) {
	t, err := txOf(tx)
	if err != nil {
		return validator.Lock{}, err
	}
	return Lock(t.Context(), t, prID)
}

// PutLock writes the PR's lock, in the transaction that read it.
func (Tables) PutLock(tx store.Tx, prID string, l validator.Lock) error {
	t, err := txOf(tx)
	if err != nil {
		return err
	}
	return PutLock(t, prID, l)
}
