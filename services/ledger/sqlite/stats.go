package sqlite

import (
	"context"
	"fmt"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/services/ledger"
)

// Stats counts sagas per state (saga_state_count, kept by triggers) and
// the durations of each step within the window w of the history: a few
// rows and one index range, however long the history.
func (s *Store) Stats(ctx context.Context, w ledger.StepWindow) (ledger.Stats, error) {
	st := ledger.Stats{States: map[contracts.State]int{}}
	for _, state := range contracts.States {
		st.States[state] = 0
	}
	counts, err := s.StateCounts(ctx)
	if err != nil {
		return ledger.Stats{}, fmt.Errorf("saga stats: %w", err)
	}
	for state, c := range counts {
		st.States[state] += c.Sagas
		st.Total += c.Sagas
	}
	rows, err := s.recentTransitions(ctx, w)
	if err != nil {
		return ledger.Stats{}, err
	}
	st.Steps = ledger.StepDurations(rows)
	st.Recent = rows
	st.Window = w
	st.Window.Transitions = len(rows)
	for _, r := range rows {
		if st.Window.Oldest.IsZero() || r.At.Before(st.Window.Oldest) {
			st.Window.Oldest = r.At
		}
	}
	return st, nil
}

// recentTransitionsQuery is the window of the history, newest first: one
// backwards range of idx_transition_at, which covers it. Ties on at are
// broken by the PR's latest transition first, so a PR's transitions in the
// window are always its last ones.
const recentTransitionsQuery = `SELECT pr_id, seq, to_state, inferred, at FROM saga_transition
	WHERE at >= ? ORDER BY at DESC, pr_id DESC, seq DESC LIMIT ?`

func (s *Store) recentTransitions(ctx context.Context, w ledger.StepWindow) ([]ledger.StepRow, error) {
	if w.Limit <= 0 {
		return nil, nil
	}
	rows, err := s.db.QueryContext(ctx, recentTransitionsQuery, micros(w.Since), w.Limit)
	if err != nil {
		return nil, fmt.Errorf("step durations: %w", err)
	}
	defer rows.Close()
	out := make([]ledger.StepRow, 0, min(w.Limit, 1024))
	for rows.Next() {
		var r ledger.StepRow
		var to string
		var at int64
		if err := rows.Scan(&r.PRID, &r.Seq, &to, &r.Inferred, &at); err != nil {
			return nil, fmt.Errorf("step durations: %w", err)
		}
		r.To, r.At = contracts.State(to), fromMicros(at)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("step durations: %w", err)
	}
	return out, nil
}
