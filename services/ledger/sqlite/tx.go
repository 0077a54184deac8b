package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/services/ledger"

	psqlite "github.com/prsaga/prsaga/platform/sqlite"
)

// Tx is a ledger.Tx over an open platform transaction: the runner's, so
// that the projection commits with the inbox and the outbox.
type Tx struct {
	ledger.TxOutbox // the platform transaction's Emit and AfterCommit
	tx              *psqlite.Tx
	// lastSeq is, per PR whose row Saga read, the number of its last
	// transition, read with the row and kept up to date by AddTransitions:
	// the projection then numbers new transitions without a query of its
	// own. Valid for this transaction only (the Tx does not outlive it).
	// A slice, not a map: a projection reads one PR, and its entry then
	// lives in first, inside the Tx, with no allocation of its own.
	lastSeq []prSeq
	first   [1]prSeq
}

type prSeq struct {
	prID string
	last int64
}

// seq is the number of the PR's last transition, if read in this
// transaction.
func (t *Tx) seq(prID string) (int64, bool) {
	for _, p := range t.lastSeq {
		if p.prID == prID {
			return p.last, true
		}
	}
	return 0, false
}

func (t *Tx) setSeq(prID string, last int64) {
	for i := range t.lastSeq {
		if t.lastSeq[i].prID == prID {
			t.lastSeq[i].last = last
			return
		}
	}
	if t.lastSeq == nil {
		t.lastSeq = t.first[:0]
	}
	t.lastSeq = append(t.lastSeq, prSeq{prID: prID, last: last})
}

var _ ledger.Tx = (*Tx)(nil)

// Bind returns the ledger's view of an open transaction.
func Bind(tx *psqlite.Tx) *Tx { return &Tx{TxOutbox: tx, tx: tx} }

const sagaColumns = `pr_id, repo, correlation_id, state, failed_step, last_error, timed_out,
	attempts, merge_sha, merged, version, created_at, updated_at`

// sagaWithLastSeqQuery reads a row and the number of the PR's last
// transition (a seek on the primary key of saga_transition) in one
// statement.
const sagaWithLastSeqQuery = `SELECT ` + sagaColumns + `,
	(SELECT coalesce(max(seq), 0) FROM saga_transition WHERE saga_transition.pr_id = pr_saga.pr_id)
	FROM pr_saga WHERE pr_id = ?`

// Saga reads the PR's row; Exists is false when there is none.
func (t *Tx) Saga(prID string) (contracts.Row, error) {
	var last int64
	r, err := scanSaga(t.tx.QueryRowContext(t.tx.Context(), sagaWithLastSeqQuery, prID), &last)
	if errors.Is(err, sql.ErrNoRows) {
		return contracts.Row{}, nil
	}
	if err != nil {
		return contracts.Row{}, fmt.Errorf("read saga %s: %w", prID, err)
	}
	t.setSeq(prID, last)
	return r, nil
}

// eventAndSagaQuery is EventRecorded, Saga and the number of the PR's last
// transition in one statement: one row always, the saga's columns NULL
// when the PR has none (three seeks on primary keys).
const eventAndSagaQuery = `SELECT EXISTS (SELECT 1 FROM saga_event WHERE event_id = ?),
	(SELECT coalesce(max(seq), 0) FROM saga_transition WHERE pr_id = ?),
	s.pr_id IS NOT NULL,
	coalesce(s.pr_id, ''), coalesce(s.repo, ''), coalesce(s.correlation_id, ''), coalesce(s.state, ''),
	coalesce(s.failed_step, ''), coalesce(s.last_error, ''), coalesce(s.timed_out, 0), coalesce(s.attempts, 0),
	coalesce(s.merge_sha, ''), coalesce(s.merged, 0), coalesce(s.version, 0), coalesce(s.created_at, 0),
	coalesce(s.updated_at, 0)
	FROM (SELECT 1) LEFT JOIN pr_saga AS s ON s.pr_id = ?`

var _ ledger.FirstReader = (*Tx)(nil)

// EventAndSaga reads whether saga_event holds the event and the PR's row
// (Exists false when there is none) in one query, and keeps the number of
// the PR's last transition for AddTransitions, whether or not the row
// exists.
func (t *Tx) EventAndSaga(eventID, prID string) (bool, contracts.Row, error) {
	var recorded, exists bool
	var last int64
	var r contracts.Row
	var state, failed string
	var created, updated int64
	err := t.tx.QueryRowContext(t.tx.Context(), eventAndSagaQuery, eventID, prID, prID).Scan(&recorded, &last, &exists,
		&r.PRID, &r.Repo, &r.CorrelationID, &state, &failed, &r.LastError, &r.TimedOut,
		&r.Attempts, &r.MergeSHA, &r.Merged, &r.Version, &created, &updated)
	if err != nil {
		return false, contracts.Row{}, fmt.Errorf("read event %s and saga %s: %w", eventID, prID, err)
	}
	t.setSeq(prID, last)
	if !exists {
		return recorded, contracts.Row{}, nil
	}
	r.Exists = true
	r.State, r.FailedStep = contracts.State(state), contracts.State(failed)
	r.CreatedAt, r.UpdatedAt = fromMicros(created), fromMicros(updated)
	return recorded, r, nil
}

// EventRecorded reports whether saga_event holds the event.
func (t *Tx) EventRecorded(eventID string) (bool, error) {
	var n int
	err := t.tx.QueryRowContext(t.tx.Context(), `SELECT count(*) FROM saga_event WHERE event_id = ?`, eventID).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("look up saga event %s: %w", eventID, err)
	}
	return n > 0, nil
}

// SaveSaga inserts (prev does not exist) or conditionally updates the row.
// Neither statement fails on a lost race: it changes no row, and that is
// reported as ledger.ErrConflict.
func (t *Tx) SaveSaga(prev, next contracts.Row) error {
	ctx := t.tx.Context()
	var res sql.Result
	var err error
	// OR FAIL: the count triggers make each write of pr_saga a write of two
	// tables, and with the default ABORT SQLite keeps a statement journal
	// for it (a copy of every page the statement touches, to undo it
	// halfway; ~6 pages per saga). A statement that fails here fails its
	// unit, which is rolled back whole (its savepoint, or the transaction),
	// so nothing half-done outlives its error. Migration 0006 keeps the
	// triggers free of upserts, whose DO UPDATE would abort regardless.
	if !prev.Exists {
		res, err = t.tx.ExecContext(ctx, `INSERT OR FAIL INTO pr_saga (`+sagaColumns+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?) ON CONFLICT (pr_id) DO NOTHING`,
			next.PRID, next.Repo, next.CorrelationID, next.State, next.FailedStep, next.LastError, next.TimedOut,
			next.Attempts, next.MergeSHA, next.Merged, micros(next.CreatedAt), micros(next.UpdatedAt))
	} else {
		// repo is not set: the pr_id names it (contracts checks that every
		// event's repo matches its pr_id), and SQLite rewrites an index
		// entry of every indexed column a SET names, changed or not —
		// idx_saga_repo on every transition.
		res, err = t.tx.ExecContext(ctx, `UPDATE OR FAIL pr_saga SET correlation_id = ?, state = ?,
			failed_step = ?, last_error = ?, timed_out = ?, attempts = ?, merge_sha = ?, merged = ?,
			created_at = ?, updated_at = ?, version = version + 1
			WHERE pr_id = ? AND version = ?`,
			next.CorrelationID, next.State, next.FailedStep, next.LastError, next.TimedOut,
			next.Attempts, next.MergeSHA, next.Merged, micros(next.CreatedAt), micros(next.UpdatedAt),
			prev.PRID, prev.Version)
	}
	if err != nil {
		return fmt.Errorf("write saga %s: %w", next.PRID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("write saga %s: %w", next.PRID, err)
	}
	if n != 1 {
		if !prev.Exists {
			return fmt.Errorf("insert saga %s: another writer created it: %w", next.PRID, ledger.ErrConflict)
		}
		return fmt.Errorf("update saga %s at version %d: %w", prev.PRID, prev.Version, ledger.ErrConflict)
	}
	return nil
}

// AddTransitions numbers ts after the PR's last transition and inserts them.
func (t *Tx) AddTransitions(prID string, ts []ledger.Transition) ([]ledger.Transition, error) {
	ctx := t.tx.Context()
	last, known := t.seq(prID)
	if !known {
		if err := t.tx.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) FROM saga_transition WHERE pr_id = ?`, prID).Scan(&last); err != nil {
			return nil, fmt.Errorf("read transitions of %s: %w", prID, err)
		}
	}
	out := make([]ledger.Transition, len(ts))
	for i, tr := range ts {
		tr.Seq = last + int64(i) + 1
		if _, err := t.tx.ExecContext(ctx, `INSERT INTO saga_transition
			(pr_id, seq, correlation_id, from_state, to_state, reason, event_id, inferred, actor, at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			prID, tr.Seq, tr.CorrelationID, tr.From, tr.To, tr.Reason, tr.EventID, tr.Inferred, tr.Actor, micros(tr.At)); err != nil {
			return nil, fmt.Errorf("insert transition %d of %s: %w", tr.Seq, prID, err)
		}
		out[i] = tr
	}
	if known {
		t.setSeq(prID, last+int64(len(ts)))
	}
	return out, nil
}

// RecordEvent inserts the event into saga_event.
func (t *Tx) RecordEvent(e ledger.Event) error {
	if _, err := t.tx.ExecContext(t.tx.Context(), `INSERT INTO saga_event
		(event_id, pr_id, correlation_id, type, status, reason, received_at, stored_at, event)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		e.EventID, e.PRID, e.CorrelationID, e.Type, e.Status, e.Reason, micros(e.ReceivedAt), storedMicros(e), string(e.Event)); err != nil {
		return fmt.Errorf("record event %s: %w", e.EventID, err)
	}
	return nil
}

func micros(t time.Time) int64 { return t.UnixMicro() }

// storedMicros is e's stored_at: NULL when it has none (read back as
// received_at).
func storedMicros(e ledger.Event) any {
	if e.StoredAt.IsZero() {
		return nil
	}
	return micros(e.StoredAt)
}

func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

type scanner interface{ Scan(dest ...any) error }

// scanSaga scans sagaColumns, then extra columns into extra.
func scanSaga(s scanner, extra ...any) (contracts.Row, error) {
	var r contracts.Row
	var state, failed string
	var created, updated int64
	dst := append([]any{&r.PRID, &r.Repo, &r.CorrelationID, &state, &failed, &r.LastError, &r.TimedOut,
		&r.Attempts, &r.MergeSHA, &r.Merged, &r.Version, &created, &updated}, extra...)
	if err := s.Scan(dst...); err != nil {
		return contracts.Row{}, err
	}
	r.Exists = true
	r.State, r.FailedStep = contracts.State(state), contracts.State(failed)
	r.CreatedAt, r.UpdatedAt = fromMicros(created), fromMicros(updated)
	return r, nil
}

// LatestEvent returns the run's most recently received event of a type
// (idx_event_correlation).
func (t *Tx) LatestEvent(correlationID, eventType string) (ledger.Event, bool, error) {
	return latestEvent(t.tx.Context(), t.tx, correlationID, eventType)
}

// RetryAnswer returns the answer stored under an Idempotency-Key.
func (t *Tx) RetryAnswer(key string) (ledger.RetryAnswer, bool, error) {
	var raw string
	// An answer older than ledger.RetryAnswerTTL is forgotten even before
	// it is pruned.
	err := t.tx.QueryRowContext(t.tx.Context(), `SELECT answer FROM retry_answer WHERE idempotency_key = ? AND created_at >= ?`,
		key, micros(t.tx.Now().Add(-ledger.RetryAnswerTTL))).Scan(&raw)
	return ledger.StoredRetryAnswer(raw, errors.Is(err, sql.ErrNoRows), err)
}

// SaveRetryAnswer stores the first answer under key, pruning expired ones.
func (t *Tx) SaveRetryAnswer(key string, a ledger.RetryAnswer) error {
	raw, err := ledger.EncodeRetryAnswer(a)
	if err != nil {
		return err
	}
	ctx, now := t.tx.Context(), t.tx.Now()
	if _, err := t.tx.ExecContext(ctx, `DELETE FROM retry_answer WHERE created_at < ?`, micros(now.Add(-ledger.RetryAnswerTTL))); err != nil {
		return fmt.Errorf("prune retry answers: %w", err)
	}
	if _, err := t.tx.ExecContext(ctx, `INSERT INTO retry_answer (idempotency_key, pr_id, answer, created_at) VALUES (?, ?, ?, ?)`,
		key, a.PRID, raw, micros(now)); err != nil {
		return fmt.Errorf("store retry answer: %w", err)
	}
	return nil
}

type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *psqlite.Row
}

func latestEvent(ctx context.Context, q queryer, correlationID, eventType string) (ledger.Event, bool, error) {
	var e ledger.Event
	var at, stored int64
	var raw string
	err := q.QueryRowContext(ctx, selectEvents+` WHERE correlation_id = ? AND type = ? ORDER BY received_at DESC, event_id DESC LIMIT 1`,
		correlationID, eventType).Scan(&e.EventID, &e.PRID, &e.CorrelationID, &e.Type, &e.Status, &e.Reason, &at, &stored, &raw)
	if errors.Is(err, sql.ErrNoRows) {
		return ledger.Event{}, false, nil
	}
	if err != nil {
		return ledger.Event{}, false, fmt.Errorf("read latest %s of run %s: %w", eventType, correlationID, err)
	}
	e.ReceivedAt, e.StoredAt, e.Event = fromMicros(at), fromMicros(stored), bodyOf(raw)
	return e, true, nil
}
