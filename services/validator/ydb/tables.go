package ydb

import (
	"encoding/json"
	"fmt"
	"time"

	ydbsdk "github.com/ydb-platform/ydb-go-sdk/v3"
	"github.com/ydb-platform/ydb-go-sdk/v3/query"

	"github.com/prsaga/prsaga/platform/store"
	pydb "github.com/prsaga/prsaga/platform/ydb"
	"github.com/prsaga/prsaga/services/validator"
)

// The validator's statements. Every value is a typed parameter.
const (
	// A range of the primary key (repo, sha, context), in key order.
	qStatuses = `SELECT context, state, description, updated_at
FROM commit_status
WHERE repo = $repo AND sha = $sha
ORDER BY context`
	// The latest status of a context wins: a blind UPSERT, no read needed.
	qPutStatus = `UPSERT INTO commit_status (repo, sha, context, state, description, updated_at)
VALUES ($repo, $sha, $context, $state, $description, $updated_at)`
	qProtection    = `SELECT contexts FROM protection WHERE repo = $repo AND branch = $branch`
	qPutProtection = `UPSERT INTO protection (repo, branch, contexts, updated_at)
VALUES ($repo, $branch, $contexts, $updated_at)`
	qLock = `SELECT correlation_id, attempt, merged FROM pr_lock WHERE pr_id = $pr_id`
	// Written in the transaction that read the lock (qLock): a concurrent
	// writer invalidates that read and the commit fails (DoTx retries), so
	// two validations of one PR cannot both take it.
	qPutLock = `UPSERT INTO pr_lock (pr_id, correlation_id, attempt, merged, updated_at)
VALUES ($pr_id, $correlation_id, $attempt, $merged, $updated_at)`
)

// Tx is the validator's tables inside a transaction of the YDB store (the
// runner's, so that the lock commits with the inbox and the outbox).
type Tx struct {
	store.Tx // the platform transaction's Emit and AfterCommit
	tx       *pydb.Tx
}

var _ validator.Tx = (*Tx)(nil)

// Bind returns the validator's tables inside an open transaction of the
// YDB store (the runner's); a transaction of another store is an error
// wrapping store.ErrWrongTx.
func (s *Store) Bind(stx store.Tx) (validator.Tx, error) {
	tx, err := pydb.TxOf(stx)
	if err != nil {
		return nil, err
	}
	return &Tx{Tx: tx, tx: tx}, nil
}

// Statuses returns the latest status of every context of repo@sha, by context.
func (t *Tx) Statuses(repo, sha string) ([]validator.Status, error) {
	return statuses(pydb.CollectTx(t.tx, qStatuses, statusesParams(repo, sha), scanStatus))
}

// statuses is what a read of qStatuses (a transaction's, or the store's
// snapshot read) returns.
func statuses(out []validator.Status, err error) ([]validator.Status, error) {
	if err != nil {
		return nil, fmt.Errorf("read statuses: %w", err)
	}
	return out, nil
}

func statusesParams(repo, sha string) ydbsdk.Params {
	return ydbsdk.ParamsBuilder().Param("$repo").Text(repo).Param("$sha").Text(sha).Build()
}

func scanStatus(row query.Row) (validator.Status, error) {
	var s validator.Status
	err := row.Scan(&s.Context, &s.State, &s.Description, &s.UpdatedAt)
	s.UpdatedAt = s.UpdatedAt.UTC()
	return s, err
}

// PutStatus stores s as the latest status of its context on repo@sha.
func (t *Tx) PutStatus(repo, sha string, s validator.Status) error {
	if err := t.tx.Exec(qPutStatus, statusParams(repo, sha, s)); err != nil {
		return fmt.Errorf("store status: %w", err)
	}
	return nil
}

func statusParams(repo, sha string, s validator.Status) ydbsdk.Params {
	return ydbsdk.ParamsBuilder().
		Param("$repo").Text(repo).
		Param("$sha").Text(sha).
		Param("$context").Text(s.Context).
		Param("$state").Text(s.State).
		Param("$description").Text(s.Description).
		Param("$updated_at").Timestamp(s.UpdatedAt).
		Build()
}

// Protection returns the required contexts of repo's branch; ok is false
// when none are configured.
func (t *Tx) Protection(repo, branch string) ([]string, bool, error) {
	row, err := t.tx.QueryRow(qProtection, protectionKey(repo, branch))
	return scanProtection(row, err, repo, branch)
}

func protectionKey(repo, branch string) ydbsdk.Params {
	return ydbsdk.ParamsBuilder().Param("$repo").Text(repo).Param("$branch").Text(branch).Build()
}

func scanProtection(row query.Row, err error, repo, branch string) ([]string, bool, error) {
	if pydb.IsNoRows(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read protection: %w", err)
	}
	var raw string
	if err := row.Scan(&raw); err != nil {
		return nil, false, fmt.Errorf("read protection: %w", err)
	}
	var contexts []string
	if err := json.Unmarshal([]byte(raw), &contexts); err != nil {
		return nil, false, fmt.Errorf("read protection of %s %s: %w", repo, branch, err)
	}
	if contexts == nil {
		contexts = []string{}
	}
	return contexts, true, nil
}

func putProtectionParams(repo, branch, contexts string, now time.Time) ydbsdk.Params {
	return ydbsdk.ParamsBuilder().
		Param("$repo").Text(repo).
		Param("$branch").Text(branch).
		Param("$contexts").Text(contexts).
		Param("$updated_at").Timestamp(now).
		Build()
}

// PutProtection replaces the required contexts of repo's branch.
func (t *Tx) PutProtection(repo, branch string, contexts []string) error {
	if contexts == nil {
		contexts = []string{}
	}
	raw, err := json.Marshal(contexts)
	if err != nil {
		return fmt.Errorf("store protection: %w", err)
	}
	err = t.tx.Exec(qPutProtection, putProtectionParams(repo, branch, string(raw), t.tx.Now()))
	if err != nil {
		return fmt.Errorf("store protection: %w", err)
	}
	return nil
}

// Lock returns the PR's lock; a PR never seen has the zero (free) lock.
func (t *Tx) Lock(prID string) (validator.Lock, error) {
	row, err := t.tx.QueryRow(qLock, lockParams(prID))
	return scanLock(row, err, prID)
}

func lockParams(prID string) ydbsdk.Params {
	return ydbsdk.ParamsBuilder().Param("$pr_id").Text(prID).Build()
}

func scanLock(row query.Row, err error, prID string) (validator.Lock, error) {
	if pydb.IsNoRows(err) {
		return validator.Lock{}, nil
	}
	if err != nil {
		return validator.Lock{}, fmt.Errorf("read lock of %s: %w", prID, err)
	}
	var l validator.Lock
	var attempt int64
	if err := row.Scan(&l.Holder, &attempt, &l.Merged); err != nil {
		return validator.Lock{}, fmt.Errorf("read lock of %s: %w", prID, err)
	}
	l.Attempt = int(attempt)
	return l, nil
}

func putLockParams(prID string, l validator.Lock, now time.Time) ydbsdk.Params {
	return ydbsdk.ParamsBuilder().
		Param("$pr_id").Text(prID).
		Param("$correlation_id").Text(l.Holder).
		Param("$attempt").Int64(int64(l.Attempt)).
		Param("$merged").Bool(l.Merged).
		Param("$updated_at").Timestamp(now).
		Build()
}

// PutLock writes the PR's lock. Call it in the transaction that read the
// lock (Lock).
func (t *Tx) PutLock(prID string, l validator.Lock) error {
	if err := t.tx.Exec(qPutLock, putLockParams(prID, l, t.tx.Now())); err != nil {
		return fmt.Errorf("store lock of %s: %w", prID, err)
	}
	return nil
}
