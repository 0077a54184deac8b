package sqlite

import (
	"context"
	"database/sql"
	"fmt"
)

// QueryPlan is SQLite's EXPLAIN QUERY PLAN of q with args: the detail
// column, a step a row ("SEARCH t USING INDEX …", "SCAN t"). For the checks
// and benchmarks that a statement uses the index it was written for.
func QueryPlan(ctx context.Context, db *sql.DB, q string, args ...any) ([]string, error) {
	rows, err := db.QueryContext(ctx, "EXPLAIN QUERY PLAN "+q, args...)
	if err != nil {
		return nil, fmt.Errorf("explain: %w", err)
	}
	defer rows.Close()
	var steps []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			return nil, fmt.Errorf("explain: %w", err)
		}
		steps = append(steps, detail)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("explain: %w", err)
	}
	return steps, nil
}
