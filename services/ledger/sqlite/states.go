package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/services/ledger"
)

// stateCountsQuery reads the counts the triggers keep (saga_state_count)
// and each state's oldest updated_at, one seek of idx_saga_state (state,
// updated_at) per state: a handful of rows however many sagas there are.
const stateCountsQuery = `SELECT state, sagas,
	(SELECT min(updated_at) FROM pr_saga WHERE pr_saga.state = saga_state_count.state)
	FROM saga_state_count WHERE sagas > 0`

// StateCounts counts sagas per state with the oldest updated_at of each,
// for the in-flight gauges and stats.
func (s *Tables) StateCounts(ctx context.Context) (map[contracts.State]ledger.StateCount, error) {
	rows, err := s.db.QueryContext(ctx, stateCountsQuery)
	if err != nil {
		return nil, fmt.Errorf("saga state counts: %w", err)
	}
	defer rows.Close()
	out := map[contracts.State]ledger.StateCount{}
	for rows.Next() {
		var state string
		var n int
		var oldest sql.NullInt64
		if err := rows.Scan(&state, &n, &oldest); err != nil {
			return nil, fmt.Errorf("saga state counts: %w", err)
		}
		c := ledger.StateCount{Sagas: n}
		if oldest.Valid {
			c.Oldest = fromMicros(oldest.Int64)
		}
		out[contracts.State(state)] = c
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("saga state counts: %w", err)
	}
	return out, nil
}
