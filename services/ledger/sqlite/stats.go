package sqlite

import (
	"context"
	"fmt"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/services/ledger"
)

// recentTransitionsQuery is the window of the history, newest first: one
// backwards range of idx_transition_at, which covers it. Ties on at are
// broken by the PR's latest transition first, so a PR's transitions in the
// window are always its last ones.
const recentTransitionsQuery = `SELECT pr_id, seq, to_state, inferred, at FROM saga_transition
	WHERE at >= ? ORDER BY at DESC, pr_id DESC, seq DESC LIMIT ?`

// RecentTransitions is the window w of the history, newest first.
func (s *Tables) RecentTransitions(ctx context.Context, w ledger.StepWindow) ([]ledger.StepRow, error) {
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
