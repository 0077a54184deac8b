package sqlite_test

import (
	"strings"
	"testing"

	ledgersqlite "github.com/prsaga/prsaga/services/ledger/sqlite"
)

// The watchdog reads only through idx_saga_state: a range search, no
// scan of pr_saga and no sort (design §4: never a full scan).
func TestStuckQueryUsesTheStateIndex(t *testing.T) {
	db := seeded(t)
	plan := queryPlan(t, db, ledgersqlite.StuckQuery, "MERGING", 1, 100)
	got := strings.Join(plan, "; ")
	if len(plan) != 1 || !strings.Contains(got, "SEARCH pr_saga USING INDEX idx_saga_state (state=? AND updated_at<?)") {
		t.Fatalf("plan %q: want one SEARCH of idx_saga_state on (state, updated_at), no scan, no temp b-tree", got)
	}
}
