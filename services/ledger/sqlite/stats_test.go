package sqlite_test

import (
	"strings"
	"testing"

	"github.com/prsaga/prsaga/platform/sqlite/sqlitetest"
	ledgersqlite "github.com/prsaga/prsaga/services/ledger/sqlite"
)

// The step durations' window is one backwards range of idx_transition_at,
// which covers it: neither saga_transition itself nor a sort, whatever
// the size of the history.
func TestStepWindowReadsOneIndexRange(t *testing.T) {
	db := sqlitetest.Open(t, ledgersqlite.Migrations)
	p := strings.Join(queryPlan(t, db, ledgersqlite.RecentTransitionsQuery, t0.UnixMicro(), 10_000), "; ")
	if !strings.Contains(p, "SEARCH saga_transition USING COVERING INDEX idx_transition_at (at>?)") || strings.Contains(p, "TEMP B-TREE") {
		t.Errorf("plan %q, want one range of the covering index idx_transition_at and no sort", p)
	}
}
