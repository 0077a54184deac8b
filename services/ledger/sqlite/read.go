package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/services/ledger"
)

// MaxEvents bounds the events listed for one PR.
const MaxEvents = 1000

// Get returns the PR's saga with its transitions, or ledger.ErrNotFound.
func (s *Store) Get(ctx context.Context, prID string) (ledger.Saga, error) {
	r, err := scanSaga(s.db.QueryRowContext(ctx, `SELECT `+sagaColumns+` FROM pr_saga WHERE pr_id = ?`, prID))
	if errors.Is(err, sql.ErrNoRows) {
		return ledger.Saga{}, fmt.Errorf("%s: %w", prID, ledger.ErrNotFound)
	}
	if err != nil {
		return ledger.Saga{}, fmt.Errorf("read saga %s: %w", prID, err)
	}
	saga := ledger.SagaOf(r)
	saga.TargetBranch = s.targetBranch(ctx, r.CorrelationID)
	rows, err := s.db.QueryContext(ctx, `SELECT seq, correlation_id, from_state, to_state, reason,
		event_id, inferred, actor, at FROM saga_transition WHERE pr_id = ? ORDER BY seq`, prID)
	if err != nil {
		return ledger.Saga{}, fmt.Errorf("read transitions of %s: %w", prID, err)
	}
	defer rows.Close()
	saga.Transitions = []ledger.Transition{}
	for rows.Next() {
		var t ledger.Transition
		var from, to string
		var at int64
		if err := rows.Scan(&t.Seq, &t.CorrelationID, &from, &to, &t.Reason, &t.EventID, &t.Inferred, &t.Actor, &at); err != nil {
			return ledger.Saga{}, fmt.Errorf("read transitions of %s: %w", prID, err)
		}
		t.From, t.To, t.At = contracts.State(from), contracts.State(to), fromMicros(at)
		saga.Transitions = append(saga.Transitions, t)
	}
	if err := rows.Err(); err != nil {
		return ledger.Saga{}, fmt.Errorf("read transitions of %s: %w", prID, err)
	}
	return saga, nil
}

// List returns one page of sagas, most recently updated first (see
// ledger.Filter). The filter is validated first; each filter is served by
// an index: idx_saga_state, idx_saga_repo or idx_saga_updated.
func (s *Store) List(ctx context.Context, f ledger.Filter) (ledger.Page, error) {
	f = f.WithDefaults()
	if err := f.Validate(); err != nil {
		return ledger.Page{}, err
	}
	q, args := listQuery(f)
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return ledger.Page{}, fmt.Errorf("list sagas: %w", err)
	}
	defer rows.Close()
	page := ledger.Page{Sagas: []ledger.Saga{}}
	for rows.Next() {
		r, err := scanSaga(rows)
		if err != nil {
			return ledger.Page{}, fmt.Errorf("list sagas: %w", err)
		}
		page.Sagas = append(page.Sagas, ledger.SagaOf(r))
	}
	if err := rows.Err(); err != nil {
		return ledger.Page{}, fmt.Errorf("list sagas: %w", err)
	}
	// One row more than asked says whether another page follows.
	if len(page.Sagas) > f.Limit {
		page.Sagas = page.Sagas[:f.Limit]
		page.NextCursor = ledger.CursorAfter(page.Sagas[f.Limit-1]).String()
	}
	return page, nil
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
func (s *Store) Events(ctx context.Context, prID string) ([]ledger.Event, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT event_id, pr_id, correlation_id, type, status, reason,
		received_at, event FROM saga_event WHERE pr_id = ? ORDER BY received_at, event_id LIMIT ?`, prID, MaxEvents)
	if err != nil {
		return nil, fmt.Errorf("list events of %s: %w", prID, err)
	}
	defer rows.Close()
	out := []ledger.Event{}
	for rows.Next() {
		var e ledger.Event
		var at int64
		var raw string
		if err := rows.Scan(&e.EventID, &e.PRID, &e.CorrelationID, &e.Type, &e.Status, &e.Reason, &at, &raw); err != nil {
			return nil, fmt.Errorf("list events of %s: %w", prID, err)
		}
		e.ReceivedAt, e.Event = fromMicros(at), []byte(raw)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list events of %s: %w", prID, err)
	}
	return out, nil
}
