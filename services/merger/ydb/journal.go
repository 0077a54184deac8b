// Package ydb keeps the merger's journal (gitrepo.Journal) in its directory
// of the YDB database: the merge and squash commits it put on target
// branches.
package ydb

import (
	"context"
	"fmt"
	"time"

	ydbsdk "github.com/ydb-platform/ydb-go-sdk/v3"
	"github.com/ydb-platform/ydb-go-sdk/v3/query"

	"github.com/prsaga/prsaga/platform/store"
	pydb "github.com/prsaga/prsaga/platform/ydb"
	"github.com/prsaga/prsaga/services/merger/gitrepo"
)

// The journal's statements; every value is a typed parameter.
const (
	// A range of the primary key (pr_id, merge_sha).
	qRecorded = `SELECT merge_sha FROM merge_journal WHERE pr_id = $pr_id`
	// The same commit recorded again has the same content (its message
	// names the run): a blind UPSERT.
	qRecord = `UPSERT INTO merge_journal (pr_id, merge_sha, repo, target_branch, strategy, base_sha, correlation_id, recorded_at)
VALUES ($pr_id, $merge_sha, $repo, $target_branch, $strategy, $base_sha, $correlation_id, $recorded_at)`
)

// Journal is the merger's journal table. Safe for concurrent use.
type Journal struct {
	DB *pydb.DB
}

// Recorded returns the commits recorded for the PR. The read is a
// snapshot taken when it begins: every record committed before is seen.
func (j *Journal) Recorded(ctx context.Context, prID string) ([]string, error) {
	out, err := pydb.Collect(ctx, j.DB, qRecorded, recordedParams(prID), scanSHA)
	if err != nil {
		return nil, fmt.Errorf("read merge journal: %w", err)
	}
	return out, nil
}

// Record commits e in a transaction of its own.
func (j *Journal) Record(ctx context.Context, e gitrepo.JournalEntry) error {
	return j.DB.Update(ctx, func(stx store.Tx) error {
		tx, err := pydb.TxOf(stx)
		if err != nil {
			return err
		}
		err = tx.Exec(qRecord, recordParams(e, tx.Now()))
		if err != nil {
			return fmt.Errorf("record in merge journal: %w", err)
		}
		return nil
	})
}

// The statements' parameters and row scans, one function each, so that
// the offline type check (typecheck_test.go) runs the very code the
// journal runs.

func recordedParams(prID string) ydbsdk.Params {
	return ydbsdk.ParamsBuilder().Param("$pr_id").Text(prID).Build()
}

func scanSHA(row query.Row) (string, error) {
	var sha string
	err := row.Scan(&sha)
	return sha, err
}

func recordParams(e gitrepo.JournalEntry, now time.Time) ydbsdk.Params {
	return ydbsdk.ParamsBuilder().
		Param("$pr_id").Text(e.PRID).
		Param("$merge_sha").Text(e.Commit).
		Param("$repo").Text(e.Repo).
		Param("$target_branch").Text(e.TargetBranch).
		Param("$strategy").Text(e.Strategy).
		Param("$base_sha").Text(e.Base).
		Param("$correlation_id").Text(e.CorrelationID).
		Param("$recorded_at").Timestamp(now).
		Build()
}
