package sqlite_test

import (
	"strings"
	"testing"

	"github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/platform/sqlite/sqlitetest"
)

// QueryPlan names the index a statement uses, a scan where there is none,
// and fails on a statement SQLite refuses.
func TestQueryPlan(t *testing.T) {
	ctx := testContext(t)
	db := sqlitetest.Open(t)
	for _, tc := range []struct{ q, want string }{
		{"SELECT * FROM inbox WHERE processed_at < ?", "INDEX idx_inbox_processed"},
		{"SELECT * FROM outbox WHERE subject = ?", "SCAN outbox"},
	} {
		steps, err := sqlite.QueryPlan(ctx, db.Reader(), tc.q, 1)
		if err != nil || len(steps) != 1 || !strings.Contains(steps[0], tc.want) {
			t.Errorf("QueryPlan(%s) = %q, %v; want one step with %q", tc.q, steps, err, tc.want)
		}
	}
	if steps, err := sqlite.QueryPlan(ctx, db.Reader(), "SELECT * FROM nowhere"); err == nil {
		t.Errorf("QueryPlan of a missing table = %q, want an error", steps)
	}
}
