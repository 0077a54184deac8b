package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/services/ledger"
)

// Stats counts sagas per state (from idx_saga_state, not the table) and
// the durations of each step from saga_transition.
func (s *Store) Stats(ctx context.Context) (ledger.Stats, error) {
	st := ledger.Stats{States: map[contracts.State]int{}}
	for _, state := range contracts.States {
		st.States[state] = 0
	}
	rows, err := s.db.Reader().QueryContext(ctx, `SELECT state, count(*) FROM pr_saga GROUP BY state`)
	if err != nil {
		return ledger.Stats{}, fmt.Errorf("saga stats: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var state string
		var n int
		if err := rows.Scan(&state, &n); err != nil {
			return ledger.Stats{}, fmt.Errorf("saga stats: %w", err)
		}
		st.States[contracts.State(state)] += n
		st.Total += n
	}
	if err := rows.Err(); err != nil {
		return ledger.Stats{}, fmt.Errorf("saga stats: %w", err)
	}
	if st.Steps, err = s.stepDurations(ctx); err != nil {
		return ledger.Stats{}, err
	}
	return st, nil
}

// stepDurations measures every finished visit of a step: from the
// transition into it to the PR's next transition. A visit entered by an
// inferred transition is left out (its start was not seen). This reads the
// whole history: fine for the ledger's sizes; a busy installation would
// keep a rolling window instead.
func (s *Store) stepDurations(ctx context.Context) (map[contracts.State]ledger.StepStats, error) {
	rows, err := s.db.Reader().QueryContext(ctx, `SELECT to_state, inferred, at,
		lead(at) OVER (PARTITION BY pr_id ORDER BY seq) FROM saga_transition`)
	if err != nil {
		return nil, fmt.Errorf("step durations: %w", err)
	}
	defer rows.Close()
	ds := map[contracts.State][]time.Duration{}
	for rows.Next() {
		var to string
		var inferred bool
		var at int64
		var next sql.NullInt64
		if err := rows.Scan(&to, &inferred, &at, &next); err != nil {
			return nil, fmt.Errorf("step durations: %w", err)
		}
		if st := contracts.State(to); st.InFlight() && !inferred && next.Valid {
			ds[st] = append(ds[st], time.Duration(next.Int64-at)*time.Microsecond)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("step durations: %w", err)
	}
	out := ledger.EmptySteps()
	for st, d := range ds {
		out[st] = ledger.StepStatsOf(d)
	}
	return out, nil
}
