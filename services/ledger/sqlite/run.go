package sqlite

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/services/ledger"
)

// RunEvent is one recorded event of a run (any); sql.ErrNoRows when the
// run has none.
func (s *Tables) RunEvent(ctx context.Context, correlationID string) (json.RawMessage, error) {
	var raw string
	if err := s.db.QueryRowContext(ctx, `SELECT event FROM saga_event WHERE correlation_id = ? LIMIT 1`,
		correlationID).Scan(&raw); err != nil {
		return nil, err
	}
	return json.RawMessage(raw), nil
}

// Run returns what the ledger recorded for one run: its transitions (of
// every PR that carried it; in practice one) and its events, oldest first.
func (s *Tables) Run(ctx context.Context, correlationID string) (ledger.Run, error) {
	run := ledger.Run{CorrelationID: correlationID, Transitions: []ledger.Transition{}, Events: []ledger.Event{}}
	rows, err := s.db.QueryContext(ctx, `SELECT pr_id, seq, correlation_id, from_state, to_state, reason,
		event_id, inferred, actor, at FROM saga_transition WHERE correlation_id = ? ORDER BY at, seq LIMIT ?`, correlationID, MaxEvents)
	if err != nil {
		return ledger.Run{}, fmt.Errorf("read run %s: %w", correlationID, err)
	}
	defer rows.Close()
	for rows.Next() {
		var t ledger.Transition
		var pr, from, to string
		var at int64
		if err := rows.Scan(&pr, &t.Seq, &t.CorrelationID, &from, &to, &t.Reason, &t.EventID, &t.Inferred, &t.Actor, &at); err != nil {
			return ledger.Run{}, fmt.Errorf("read run %s: %w", correlationID, err)
		}
		t.From, t.To, t.At = contracts.State(from), contracts.State(to), fromMicros(at)
		run.PRID = pr
		run.Transitions = append(run.Transitions, t)
	}
	if err := rows.Err(); err != nil {
		return ledger.Run{}, fmt.Errorf("read run %s: %w", correlationID, err)
	}
	erows, err := s.db.QueryContext(ctx, `SELECT event_id, pr_id, correlation_id, type, status, reason,
		received_at, event FROM saga_event WHERE correlation_id = ? ORDER BY received_at, event_id LIMIT ?`, correlationID, MaxEvents)
	if err != nil {
		return ledger.Run{}, fmt.Errorf("read events of run %s: %w", correlationID, err)
	}
	defer erows.Close()
	for erows.Next() {
		var e ledger.Event
		var at int64
		var raw string
		if err := erows.Scan(&e.EventID, &e.PRID, &e.CorrelationID, &e.Type, &e.Status, &e.Reason, &at, &raw); err != nil {
			return ledger.Run{}, fmt.Errorf("read events of run %s: %w", correlationID, err)
		}
		e.ReceivedAt, e.Event = fromMicros(at), []byte(raw)
		if run.PRID == "" {
			run.PRID = e.PRID
		}
		run.Events = append(run.Events, e)
	}
	if err := erows.Err(); err != nil {
		return ledger.Run{}, fmt.Errorf("read events of run %s: %w", correlationID, err)
	}
	if run.PRID == "" {
		return ledger.Run{}, fmt.Errorf("run %s: %w", correlationID, ledger.ErrNotFound)
	}
	return run, nil
}
