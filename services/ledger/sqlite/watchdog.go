package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/services/ledger"
)

var (
	_ ledger.WatchdogStore = (*Store)(nil)
	_ ledger.Evidence      = (*Store)(nil)
)

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
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

// Stuck returns at most limit in-flight rows last updated before their
// state's cutoff, oldest first: one index range per in-flight state.
func (s *Store) Stuck(ctx context.Context, cutoffs map[contracts.State]time.Time, limit int) ([]contracts.Row, error) {
	var out []contracts.Row
	for _, st := range contracts.Steps {
		cut, ok := cutoffs[st]
		if !ok {
			continue
		}
		rows, err := s.db.QueryContext(ctx, stuckQuery, string(st), micros(cut), limit)
		if err != nil {
			return nil, fmt.Errorf("read stuck sagas: %w", err)
		}
		for rows.Next() {
			r, err := scanSaga(rows)
			if err != nil {
				rows.Close()
				return nil, fmt.Errorf("read stuck sagas: %w", err)
			}
			out = append(out, r)
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("read stuck sagas: %w", err)
		}
	}
	slices.SortFunc(out, func(a, b contracts.Row) int {
		if c := a.UpdatedAt.Compare(b.UpdatedAt); c != 0 {
			return c
		}
		return compareStrings(a.PRID, b.PRID)
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// LatestEvent returns the run's most recently received event of a type.
func (s *Store) LatestEvent(ctx context.Context, correlationID, eventType string) (ledger.Event, bool, error) {
	return latestEvent(ctx, s.db, correlationID, eventType)
}

// LastTransition returns the PR's most recent transition.
func (s *Store) LastTransition(ctx context.Context, prID string) (ledger.Transition, bool, error) {
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
func (s *Store) OutboxStatus(ctx context.Context, eventID string) (held, sent bool, err error) {
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
