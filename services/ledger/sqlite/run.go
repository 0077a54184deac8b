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

// RunTransitions lists a run's transitions (of every PR that carried it),
// oldest first, with the PR of the last.
func (s *Tables) RunTransitions(ctx context.Context, correlationID string) ([]ledger.Transition, string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT pr_id, seq, correlation_id, from_state, to_state, reason,
		event_id, inferred, actor, at FROM saga_transition WHERE correlation_id = ? ORDER BY at, seq LIMIT ?`, correlationID, MaxEvents)
	if err != nil {
		return nil, "", fmt.Errorf("read run %s: %w", correlationID, err)
	}
	defer rows.Close()
	out, prID := []ledger.Transition{}, ""
	for rows.Next() {
		var t ledger.Transition
		var from, to string
		var at int64
		if err := rows.Scan(&prID, &t.Seq, &t.CorrelationID, &from, &to, &t.Reason, &t.EventID, &t.Inferred, &t.Actor, &at); err != nil {
			return nil, "", fmt.Errorf("read run %s: %w", correlationID, err)
		}
		t.From, t.To, t.At = contracts.State(from), contracts.State(to), fromMicros(at)
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("read run %s: %w", correlationID, err)
	}
	return out, prID, nil
}

// RunEvents lists a run's events, oldest first.
func (s *Tables) RunEvents(ctx context.Context, correlationID string) ([]ledger.Event, error) {
	rows, err := s.db.QueryContext(ctx, selectEvents+` WHERE correlation_id = ? ORDER BY received_at, event_id LIMIT ?`, correlationID, MaxEvents)
	return eventsOf(rows, err, "read events of run %s", correlationID)
}
