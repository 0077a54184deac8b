package ydb

import (
	"context"

	pydb "github.com/prsaga/prsaga/platform/ydb"
	"github.com/prsaga/prsaga/services/validator"
)

// Store is the validator's tables on the YDB store: reads outside a
// transaction are snapshot reads; Bind gives the tables inside one. Safe
// for concurrent use.
type Store struct {
	db *pydb.DB
}

var _ validator.Store = (*Store)(nil)

// NewStore returns a Store over db.
func NewStore(db *pydb.DB) *Store { return &Store{db: db} }

// Statuses returns the latest status of every context of repo@sha.
func (s *Store) Statuses(ctx context.Context, repo, sha string) ([]validator.Status, error) {
	return statuses(pydb.Collect(ctx, s.db, qStatuses, statusesParams(repo, sha), scanStatus))
}

// Protection returns the required contexts of repo's branch; ok is false
// when none are configured.
func (s *Store) Protection(ctx context.Context, repo, branch string) ([]string, bool, error) {
	row, err := s.db.QueryRow(ctx, qProtection, protectionKey(repo, branch))
	return scanProtection(row, err, repo, branch)
}

// Lock returns the PR's lock (for tests and diagnostics).
func (s *Store) Lock(ctx context.Context, prID string) (validator.Lock, error) {
	row, err := s.db.QueryRow(ctx, qLock, lockParams(prID))
	return scanLock(row, err, prID)
}
