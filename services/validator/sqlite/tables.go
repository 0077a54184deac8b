package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	psqlite "github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/services/validator"
)

// Querier runs reads: a *psqlite.Tx inside a commit, or the *psqlite.DB
// outside (its statements are prepared once on the reader pool).
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*psqlite.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *psqlite.Row
}

// Statuses returns the latest status of every context of repo@sha, by context.
func Statuses(ctx context.Context, q Querier, repo, sha string) ([]validator.Status, error) {
	rows, err := q.QueryContext(ctx,
		`SELECT context, state, description, updated_at FROM commit_status WHERE repo = ? AND sha = ? ORDER BY context`, repo, sha)
	if err != nil {
		return nil, fmt.Errorf("read statuses: %w", err)
	}
	defer rows.Close()
	out := []validator.Status{}
	for rows.Next() {
		var s validator.Status
		var at int64
		if err := rows.Scan(&s.Context, &s.State, &s.Description, &at); err != nil {
			return nil, fmt.Errorf("read statuses: %w", err)
		}
		s.UpdatedAt = time.UnixMicro(at).UTC()
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read statuses: %w", err)
	}
	return out, nil
}

// PutStatus stores s as the latest status of its context on repo@sha.
func PutStatus(tx *psqlite.Tx, repo, sha string, s validator.Status) error {
	_, err := tx.ExecContext(tx.Context(), `INSERT INTO commit_status (repo, sha, context, state, description, updated_at)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (repo, sha, context) DO UPDATE SET
			state = excluded.state, description = excluded.description, updated_at = excluded.updated_at`,
		repo, sha, s.Context, s.State, s.Description, s.UpdatedAt.UnixMicro())
	if err != nil {
		return fmt.Errorf("store status: %w", err)
	}
	return nil
}

// Protection returns the required contexts of repo's branch; ok is false
// when none are configured (the caller applies its default).
func Protection(ctx context.Context, q Querier, repo, branch string) (contexts []string, ok bool, err error) {
	var raw string
	err = q.QueryRowContext(ctx, `SELECT contexts FROM protection WHERE repo = ? AND branch = ?`, repo, branch).Scan(&raw)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read protection: %w", err)
	}
	if err := json.Unmarshal([]byte(raw), &contexts); err != nil {
		return nil, false, fmt.Errorf("read protection of %s %s: %w", repo, branch, err)
	}
	if contexts == nil {
		contexts = []string{}
	}
	return contexts, true, nil
}

// PutProtection replaces the required contexts of repo's branch.
func PutProtection(tx *psqlite.Tx, repo, branch string, contexts []string) error {
	if contexts == nil {
		contexts = []string{}
	}
	raw, err := json.Marshal(contexts)
	if err != nil {
		return fmt.Errorf("store protection: %w", err)
	}
	_, err = tx.ExecContext(tx.Context(), `INSERT INTO protection (repo, branch, contexts, updated_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (repo, branch) DO UPDATE SET contexts = excluded.contexts, updated_at = excluded.updated_at`,
		repo, branch, string(raw), tx.Now().UnixMicro())
	if err != nil {
		return fmt.Errorf("store protection: %w", err)
	}
	return nil
}

// Lock returns the PR's lock; a PR never seen has the zero (free) lock.
func Lock(ctx context.Context, q Querier, prID string) (validator.Lock, error) {
	var l validator.Lock
	var merged int
	err := q.QueryRowContext(ctx, `SELECT correlation_id, attempt, merged FROM pr_lock WHERE pr_id = ?`, prID).
		Scan(&l.Holder, &l.Attempt, &merged)
	if errors.Is(err, sql.ErrNoRows) {
		return validator.Lock{}, nil
	}
	if err != nil {
		return validator.Lock{}, fmt.Errorf("read lock of %s: %w", prID, err)
	}
	l.Merged = merged != 0
	return l, nil
}

// PutLock writes the PR's lock. Call it in the transaction that read the
// lock: SQLite's single writer (BEGIN IMMEDIATE) makes read-decide-write
// atomic, so two validations of one PR cannot both take it.
func PutLock(tx *psqlite.Tx, prID string, l validator.Lock) error {
	merged := 0
	if l.Merged {
		merged = 1
	}
	_, err := tx.ExecContext(tx.Context(), `INSERT INTO pr_lock (pr_id, correlation_id, attempt, merged, updated_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (pr_id) DO UPDATE SET correlation_id = excluded.correlation_id, attempt = excluded.attempt,
			merged = excluded.merged, updated_at = excluded.updated_at`,
		prID, l.Holder, l.Attempt, merged, tx.Now().UnixMicro())
	if err != nil {
		return fmt.Errorf("store lock of %s: %w", prID, err)
	}
	return nil
}
