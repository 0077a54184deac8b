// Package sqlite keeps the merger's journal (gitrepo.Journal) in its SQLite
// database: the merge and squash commits it put on target branches.
package sqlite

import (
	"context"
	"fmt"

	psqlite "github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/platform/store"
	"github.com/prsaga/prsaga/services/merger/gitrepo"
)

// Journal is the merger's journal table. Safe for concurrent use.
type Journal struct {
	DB *psqlite.DB
}

// Recorded returns the commits recorded for the PR. It reads through the
// reader pool: a record committed before the read began is seen.
func (j *Journal) Recorded(ctx context.Context, prID string) ([]string, error) {
	rows, err := j.DB.QueryContext(ctx, `SELECT merge_sha FROM merge_journal WHERE pr_id = ?`, prID)
	if err != nil {
		return nil, fmt.Errorf("read merge journal: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var sha string
		if err := rows.Scan(&sha); err != nil {
			return nil, fmt.Errorf("read merge journal: %w", err)
		}
		out = append(out, sha)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read merge journal: %w", err)
	}
	return out, nil
}

// Record commits e in a transaction of its own; the first record of a
// commit is kept.
func (j *Journal) Record(ctx context.Context, e gitrepo.JournalEntry) error {
	return j.DB.Update(ctx, func(stx store.Tx) error {
		tx, err := psqlite.TxOf(stx)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(tx.Context(), `INSERT INTO merge_journal
			(pr_id, merge_sha, repo, target_branch, strategy, base_sha, correlation_id, recorded_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (pr_id, merge_sha) DO NOTHING`,
			e.PRID, e.Commit, e.Repo, e.TargetBranch, e.Strategy, e.Base, e.CorrelationID, tx.Now().UnixMicro())
		if err != nil {
			return fmt.Errorf("record in merge journal: %w", err)
		}
		return nil
	})
}
