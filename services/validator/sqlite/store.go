package sqlite

import (
	"context"

	psqlite "github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/services/validator"
)

// Store is the validator's tables on the SQLite store: reads outside a
// transaction go through the read pool; Bind gives the tables inside one.
// Safe for concurrent use.
type Store struct {
	db *psqlite.DB
}

var _ validator.Store = (*Store)(nil)

// NewStore returns a Store over db.
func NewStore(db *psqlite.DB) *Store { return &Store{db: db} }

// Statuses returns the latest status of every context of repo@sha.
func (s *Store) Statuses(ctx context.Context, repo, sha string) ([]validator.Status, error) {
	return Statuses(ctx, s.db, repo, sha)
}

// Protection returns the required contexts of repo's branch; ok is false
// when none are configured.
func (s *Store) Protection(ctx context.Context, repo, branch string) ([]string, bool, error) {
	return Protection(ctx, s.db, repo, branch)
}

// Lock returns the PR's lock (for tests and diagnostics).
func (s *Store) Lock(ctx context.Context, prID string) (validator.Lock, error) {
	return Lock(ctx, s.db, prID)
}
