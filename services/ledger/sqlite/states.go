package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/services/ledger"
)

// StateCounts counts sagas per state with the oldest updated_at of each,
// for the in-flight gauges. One pass over idx_saga_state(state,
// updated_at), which covers the query: the table itself is not read.
func (s *Store) StateCounts(ctx context.Context) (map[contracts.State]ledger.StateCount, error) {
	rows, err := s.db.Reader().QueryContext(ctx, `SELECT state, count(*), min(updated_at) FROM pr_saga GROUP BY state`)
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
