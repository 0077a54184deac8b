package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/prsaga/prsaga/contracts"
	psqlite "github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/services/ledger"
)

// MaxEvents bounds the events listed for one PR.
const MaxEvents = 1000

// SagaRow reads the PR's row, or ledger.ErrNotFound.
func (s *Tables) SagaRow(ctx context.Context, prID string) (contracts.Row, error) {
	r, err := scanSaga(s.db.QueryRowContext(ctx, `SELECT `+sagaColumns+` FROM pr_saga WHERE pr_id = ?`, prID))
	if errors.Is(err, sql.ErrNoRows) {
		return contracts.Row{}, fmt.Errorf("%s: %w", prID, ledger.ErrNotFound)
	}
	if err != nil {
		return contracts.Row{}, fmt.Errorf("read saga %s: %w", prID, err)
	}
	return r, nil
}

// Transitions lists the PR's history, oldest first.
func (s *Tables) Transitions(ctx context.Context, prID string) ([]ledger.Transition, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT seq, correlation_id, from_state, to_state, reason,
		event_id, inferred, actor, at FROM saga_transition WHERE pr_id = ? ORDER BY seq`, prID)
	if err != nil {
		return nil, fmt.Errorf("read transitions of %s: %w", prID, err)
	}
	defer rows.Close()
	out := []ledger.Transition{}
	for rows.Next() {
		var t ledger.Transition
		var from, to string
		var at int64
		if err := rows.Scan(&t.Seq, &t.CorrelationID, &from, &to, &t.Reason, &t.EventID, &t.Inferred, &t.Actor, &at); err != nil {
			return nil, fmt.Errorf("read transitions of %s: %w", prID, err)
		}
		t.From, t.To, t.At = contracts.State(from), contracts.State(to), fromMicros(at)
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read transitions of %s: %w", prID, err)
	}
	return out, nil
}

// ListRows returns the rows of one page of f, newest first: one statement,
// served by an index (idx_saga_state, idx_saga_repo or idx_saga_updated).
func (s *Tables) ListRows(ctx context.Context, f ledger.Filter) ([]contracts.Row, error) {
	q, args := listQuery(f)
	return s.sagas(ctx, q, args...)
}

// sagas runs q, which selects sagaColumns, and scans every row.
func (s *Tables) sagas(ctx context.Context, q string, args ...any) ([]contracts.Row, error) {
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []contracts.Row
	for rows.Next() {
		r, err := scanSaga(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

func listQuery(f ledger.Filter) (string, []any) {
	var where []string
	var args []any
	if f.State != "" {
		where = append(where, "state = ?")
		args = append(args, string(f.State))
	}
	if f.Repo != "" {
		where = append(where, "repo = ?")
		args = append(args, f.Repo)
	}
	if f.Stuck {
		// The watchdog's predicate (Store.Stuck), with the same cutoffs.
		var or []string
		for _, st := range contracts.Steps {
			cut, ok := f.StuckBefore[st]
			if !ok || (f.State != "" && f.State != st) {
				continue
			}
			or = append(or, "(state = ? AND updated_at < ?)")
			args = append(args, string(st), micros(cut))
		}
		if len(or) == 0 {
			or = []string{"0"}
		}
		where = append(where, "("+strings.Join(or, " OR ")+")")
	}
	if f.After != nil {
		where = append(where, "(updated_at, pr_id) < (?, ?)")
		args = append(args, micros(f.After.UpdatedAt), f.After.PRID)
	}
	q := `SELECT ` + sagaColumns + ` FROM pr_saga`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY updated_at DESC, pr_id DESC LIMIT ?`
	return q, append(args, f.Limit+1)
}

// Events lists the events recorded for a PR, oldest first (at most
// MaxEvents). An unknown PR has none.
func (s *Tables) Events(ctx context.Context, prID string) ([]ledger.Event, error) {
	rows, err := s.db.QueryContext(ctx, selectEvents+` WHERE pr_id = ? ORDER BY received_at, event_id LIMIT ?`, prID, MaxEvents)
	return eventsOf(rows, err, "list events of %s", prID)
}

// selectEvents reads saga_event's columns in the order scanEvents scans.
const selectEvents = `SELECT event_id, pr_id, correlation_id, type, status, reason, received_at, coalesce(stored_at, received_at), event FROM saga_event`

// eventsOf is the answer of a query of events (rows, err): the events, or
// the error said in terms of what was read.
func eventsOf(rows *psqlite.Rows, err error, format string, args ...any) ([]ledger.Event, error) {
	if err == nil {
		var out []ledger.Event
		if out, err = scanEvents(rows); err == nil {
			return out, nil
		}
	}
	return nil, fmt.Errorf(format+": %w", append(args, err)...)
}

// scanEvents scans and closes rows of saga_event's columns (event_id,
// pr_id, correlation_id, type, status, reason, received_at, stored_at,
// event).
func scanEvents(rows *psqlite.Rows) ([]ledger.Event, error) {
	defer rows.Close()
	out := []ledger.Event{}
	for rows.Next() {
		var e ledger.Event
		var at, stored int64
		var raw string
		if err := rows.Scan(&e.EventID, &e.PRID, &e.CorrelationID, &e.Type, &e.Status, &e.Reason, &at, &stored, &raw); err != nil {
			return nil, err
		}
		e.ReceivedAt, e.StoredAt, e.Event = fromMicros(at), fromMicros(stored), bodyOf(raw)
		out = append(out, e)
	}
	return out, rows.Err()
}
