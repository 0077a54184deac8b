package ydb

import (
	"fmt"

	"github.com/ydb-platform/ydb-go-sdk/v3/query"

	"github.com/prsaga/prsaga/contracts"
	pydb "github.com/prsaga/prsaga/platform/ydb"
	"github.com/prsaga/prsaga/services/ledger"
)

// Tx is a ledger.Tx over an open transaction of the YDB store. Reads come
// before writes of the same table within each method, and the projector
// reads every table before it writes it (saga_event, pr_saga,
// saga_transition), so nothing depends on reading the transaction's own
// writes.
type Tx struct {
	ledger.TxOutbox // the platform transaction's Emit and AfterCommit
	tx              *pydb.Tx
}

var _ ledger.Tx = (*Tx)(nil)

// Saga reads the PR's row; Exists is false when there is none.
func (t *Tx) Saga(prID string) (contracts.Row, error) {
	row, err := t.tx.QueryRow(qSaga, prKey(prID))
	return sagaRow(row, err, prID)
}

// sagaRow scans the answer of qSaga: a row that does not Exist when there
// is none.
func sagaRow(row query.Row, err error, prID string) (contracts.Row, error) {
	if pydb.IsNoRows(err) {
		return contracts.Row{}, nil
	}
	if err == nil {
		var r contracts.Row
		if r, err = scanSaga(row); err == nil {
			return r, nil
		}
	}
	return contracts.Row{}, fmt.Errorf("read saga %s: %w", prID, err)
}

// EventRecorded reports whether saga_event holds the event.
func (t *Tx) EventRecorded(eventID string) (bool, error) {
	_, err := t.tx.QueryRow(qEventRecorded, eventIDParams(eventID))
	switch {
	case err == nil:
		return true, nil
	case pydb.IsNoRows(err):
		return false, nil
	}
	return false, fmt.Errorf("look up saga event %s: %w", eventID, err)
}

// SaveSaga writes next as the PR's row if the row is still as prev left it:
// absent (prev.Exists false) or at prev.Version. It reads the version
// first, in this transaction; a lost race is ledger.ErrConflict.
func (t *Tx) SaveSaga(prev, next contracts.Row) error {
	key := next.PRID
	if prev.Exists {
		key = prev.PRID
	}
	row, err := t.tx.QueryRow(qSagaVersion, prKey(key))
	var version int64
	switch {
	case pydb.IsNoRows(err):
		if prev.Exists {
			return fmt.Errorf("update saga %s at version %d: the row is gone: %w", prev.PRID, prev.Version, ledger.ErrConflict)
		}
	case err != nil:
		return fmt.Errorf("write saga %s: %w", next.PRID, err)
	default:
		if version, err = scanVersion(row); err != nil {
			return fmt.Errorf("write saga %s: %w", next.PRID, err)
		}
		if !prev.Exists {
			return fmt.Errorf("insert saga %s: another writer created it: %w", next.PRID, ledger.ErrConflict)
		}
		if version != prev.Version {
			return fmt.Errorf("update saga %s at version %d (now %d): %w", prev.PRID, prev.Version, version, ledger.ErrConflict)
		}
	}
	if err := t.countFinal(key, prev, next); err != nil {
		return fmt.Errorf("write saga %s: %w", next.PRID, err)
	}
	p := putSagaParams(key, next, version+1)
	if err := t.tx.Exec(qPutSaga, p); err != nil {
		return fmt.Errorf("write saga %s: %w", next.PRID, err)
	}
	return nil
}

// final reports whether a saga in state s rests in a final state.
func final(s contracts.State) bool { return s != "" && !s.InFlight() }

// countFinal keeps saga_state_count: a saga entering a final state counts
// one more there, one leaving it one less (a retry of a failed merge). The
// counter row is read first, in this transaction.
func (t *Tx) countFinal(prID string, prev, next contracts.Row) error {
	from := contracts.State("")
	if prev.Exists {
		from = prev.State
	}
	if from == next.State {
		return nil
	}
	for _, d := range []struct {
		state contracts.State
		delta int64
	}{{from, -1}, {next.State, +1}} {
		if !final(d.state) {
			continue
		}
		var n int64
		row, err := t.tx.QueryRow(qStateCount, stateCountParams(d.state, prID))
		switch {
		case err == nil:
			if n, err = scanSagas(row); err != nil {
				return err
			}
		case !pydb.IsNoRows(err):
			return err
		}
		if err := t.tx.Exec(qPutStateCount, putStateCountParams(d.state, prID, n+d.delta)); err != nil {
			return err
		}
	}
	return nil
}

// AddTransitions numbers ts after the PR's last transition and inserts them.
func (t *Tx) AddTransitions(prID string, ts []ledger.Transition) ([]ledger.Transition, error) {
	if len(ts) == 0 {
		return nil, nil
	}
	row, err := t.tx.QueryRow(qLastSeq, prKey(prID))
	if err != nil {
		return nil, fmt.Errorf("read transitions of %s: %w", prID, err)
	}
	last, err := scanLastSeq(row)
	if err != nil {
		return nil, fmt.Errorf("read transitions of %s: %w", prID, err)
	}
	var base int64
	if last != nil {
		base = *last
	}
	out := make([]ledger.Transition, len(ts))
	for i, tr := range ts {
		tr.Seq = base + int64(i) + 1
		out[i] = tr
	}
	if err := t.tx.Exec(qAddTransitions, transitionsParams(prID, out)); err != nil {
		return nil, fmt.Errorf("insert transitions of %s: %w", prID, err)
	}
	return out, nil
}

// RecordEvent stores one received event in saga_event. The projector has
// looked it up first (EventRecorded) in this transaction.
func (t *Tx) RecordEvent(e ledger.Event) error {
	err := t.tx.Exec(qRecordEvent, recordEventParams(e))
	if err != nil {
		return fmt.Errorf("record event %s: %w", e.EventID, err)
	}
	return nil
}

// LatestEvent returns the run's most recently received event of a type.
func (t *Tx) LatestEvent(correlationID, eventType string) (ledger.Event, bool, error) {
	row, err := t.tx.QueryRow(qLatestEvent, latestEventParams(correlationID, eventType))
	return scanLatest(row, err, correlationID, eventType)
}

func scanLatest(row query.Row, err error, correlationID, eventType string) (ledger.Event, bool, error) {
	if pydb.IsNoRows(err) {
		return ledger.Event{}, false, nil
	}
	if err == nil {
		var e ledger.Event
		if e, err = scanEvent(row); err == nil {
			return e, true, nil
		}
	}
	return ledger.Event{}, false, fmt.Errorf("read latest %s of run %s: %w", eventType, correlationID, err)
}

// RetryAnswer returns the answer stored under an Idempotency-Key.
func (t *Tx) RetryAnswer(key string) (ledger.RetryAnswer, bool, error) {
	row, err := t.tx.QueryRow(qRetryAnswer, retryAnswerParams(key, t.tx.Now().Add(-ledger.RetryAnswerTTL)))
	if pydb.IsNoRows(err) {
		return ledger.RetryAnswer{}, false, nil
	}
	raw := ""
	if err == nil {
		raw, err = scanText(row)
	}
	return ledger.StoredRetryAnswer(raw, false, err)
}

// SaveRetryAnswer stores the first answer under key (the retrier read it
// first in this transaction).
func (t *Tx) SaveRetryAnswer(key string, a ledger.RetryAnswer) error {
	raw, err := ledger.EncodeRetryAnswer(a)
	if err != nil {
		return err
	}
	err = t.tx.Exec(qSaveRetryAnswer, saveRetryAnswerParams(key, a.PRID, raw, t.tx.Now()))
	if err != nil {
		return fmt.Errorf("store retry answer: %w", err)
	}
	return nil
}

func scanSaga(row query.Row) (contracts.Row, error) {
	var r contracts.Row
	var state, failed string
	var attempts, version int64
	if err := row.Scan(&r.PRID, &r.Repo, &r.CorrelationID, &state, &failed, &r.LastError, &r.TimedOut,
		&attempts, &r.MergeSHA, &r.Merged, &version, &r.CreatedAt, &r.UpdatedAt); err != nil {
		return contracts.Row{}, err
	}
	r.Exists = true
	r.State, r.FailedStep = contracts.State(state), contracts.State(failed)
	r.Attempts, r.Version = int(attempts), version
	r.CreatedAt, r.UpdatedAt = r.CreatedAt.UTC(), r.UpdatedAt.UTC()
	return r, nil
}

func scanEvent(row query.Row) (ledger.Event, error) {
	var e ledger.Event
	var raw string
	if err := row.Scan(&e.EventID, &e.PRID, &e.CorrelationID, &e.Type, &e.Status, &e.Reason, &e.ReceivedAt, &raw); err != nil {
		return ledger.Event{}, err
	}
	// saga_event on YDB keeps no stored_at: `ledger verify`, its one
	// reader, runs on SQLite only.
	e.ReceivedAt, e.Event = e.ReceivedAt.UTC(), []byte(raw)
	e.StoredAt = e.ReceivedAt
	return e, nil
}

func scanTransition(row query.Row, withPR bool) (ledger.Transition, string, error) {
	var t ledger.Transition
	var pr, from, to string
	dst := []any{&t.Seq, &t.CorrelationID, &from, &to, &t.Reason, &t.EventID, &t.Inferred, &t.Actor, &t.At}
	if withPR {
		dst = append([]any{&pr}, dst...)
	}
	if err := row.Scan(dst...); err != nil {
		return ledger.Transition{}, "", err
	}
	t.From, t.To, t.At = contracts.State(from), contracts.State(to), t.At.UTC()
	return t, pr, nil
}
