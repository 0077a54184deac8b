package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/services/ledger"
)

// Ping checks that the database answers.
func (s *Tables) Ping(ctx context.Context) error {
	var one int
	if err := s.db.QueryRowContext(ctx, `SELECT 1 FROM pr_saga LIMIT 1`).Scan(&one); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("ping ledger store: %w", err)
	}
	return nil
}

// stuckQuery reads one state's stuck rows, oldest first. It is a range on
// idx_saga_state (state, updated_at): no scan, no sort (see the tests'
// EXPLAIN QUERY PLAN).
const stuckQuery = `SELECT ` + sagaColumns + ` FROM pr_saga INDEXED BY idx_saga_state
	WHERE state = ? AND updated_at < ? ORDER BY updated_at LIMIT ?`

// StuckRows returns at most limit rows in state last updated before
// cutoff, oldest first: one index range.
func (s *Tables) StuckRows(ctx context.Context, state contracts.State, cutoff time.Time, limit int) ([]contracts.Row, error) {
	return s.sagas(ctx, stuckQuery, string(state), micros(cutoff), limit)
}

// LatestEvent returns the run's most recently received event of a type.
func (s *Tables) LatestEvent(ctx context.Context, correlationID, eventType string) (ledger.Event, bool, error) {
	return latestEvent(ctx, s.db, correlationID, eventType)
}

// LastTransition returns the PR's most recent transition.
func (s *Tables) LastTransition(ctx context.Context, prID string) (ledger.Transition, bool, error) {
	var t ledger.Transition
	var from, to string
	var at int64
	err := s.db.QueryRowContext(ctx, `SELECT seq, correlation_id, from_state, to_state, reason, event_id,
		inferred, actor, at FROM saga_transition WHERE pr_id = ? ORDER BY seq DESC LIMIT 1`, prID).
		Scan(&t.Seq, &t.CorrelationID, &from, &to, &t.Reason, &t.EventID, &t.Inferred, &t.Actor, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return ledger.Transition{}, false, nil
	}
	if err != nil {
		return ledger.Transition{}, false, fmt.Errorf("read last transition of %s: %w", prID, err)
	}
	t.From, t.To, t.At = contracts.State(from), contracts.State(to), fromMicros(at)
	return t, true, nil
}

// OutboxStatus says whether the ledger's outbox holds an event and whether
// the relay has published it.
func (s *Tables) OutboxStatus(ctx context.Context, eventID string) (held, sent bool, err error) {
	var sentAt sql.NullInt64
	err = s.db.QueryRowContext(ctx, `SELECT sent_at FROM outbox WHERE id = ?`, eventID).Scan(&sentAt)
	if errors.Is(err, sql.ErrNoRows) {
		return false, false, nil
	}
	if err != nil {
		return false, false, fmt.Errorf("read outbox row %s: %w", eventID, err)
	}
	return true, sentAt.Valid, nil
}
