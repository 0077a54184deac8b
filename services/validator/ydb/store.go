package ydb

import (
	"context"
	"fmt"
	"time"

	"github.com/ydb-platform/ydb-go-sdk/v3/query"

	"github.com/prsaga/prsaga/platform/store"
	pydb "github.com/prsaga/prsaga/platform/ydb"
	"github.com/prsaga/prsaga/services/validator"
)

// Store is the validator's tables for the HTTP API: each method is its own
// transaction or a snapshot read. Safe for concurrent use.
type Store struct {
	db  *pydb.DB
	now func() time.Time
}

// NewStore returns a Store over db; now stamps statuses (nil: time.Now).
func NewStore(db *pydb.DB, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{db: db, now: now}
}

// SetStatus records st (its UpdatedAt set now) as the latest status of its
// context on repo@sha and returns what was stored.
func (s *Store) SetStatus(ctx context.Context, repo, sha string, st validator.Status) (validator.Status, error) {
	st.UpdatedAt = s.now().UTC().Truncate(time.Microsecond)
	err := s.db.Update(ctx, func(tx store.Tx) error { return Tables{}.PutStatus(tx, repo, sha, st) })
	return st, err
}

// Statuses returns the latest status of every context of repo@sha.
func (s *Store) Statuses(ctx context.Context, repo, sha string) ([]validator.Status, error) {
	out := []validator.Status{}
	err := s.db.Query(ctx, qStatuses, statusesParams(repo, sha),
		func(row query.Row) error {
			st, err := scanStatus(row)
			out = append(out, st)
			return err
		})
	if err != nil {
		return nil, fmt.Errorf("read statuses: %w", err)
	}
	return out, nil
}

// SetProtection replaces the required contexts of repo's branch.
func (s *Store) SetProtection(ctx context.Context, repo, branch string, contexts []string) error {
	return s.db.Update(ctx, func(tx store.Tx) error { return Tables{}.PutProtection(tx, repo, branch, contexts) })
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
