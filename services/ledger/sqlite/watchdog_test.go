package sqlite_test

import (
	"strings"
	"testing"

	"github.com/prsaga/prsaga/platform/sqlite/sqlitetest"
	ledgersqlite "github.com/prsaga/prsaga/services/ledger/sqlite"
	"github.com/prsaga/prsaga/services/ledger/storetest"
)

// The watchdog reads only through idx_saga_state: a range search, no
// scan of pr_saga and no sort (design §4: never a full scan).
func TestStuckQueryUsesTheStateIndex(t *testing.T) {
	db := sqlitetest.Open(t, ledgersqlite.Migrations)
	storetest.Seed(t, ledgersqlite.NewStore(db))
	plan := queryPlan(t, db, ledgersqlite.StuckQuery, "MERGING", 1, 100)
	got := strings.Join(plan, "; ")
	if len(plan) != 1 || !strings.Contains(got, "SEARCH pr_saga USING INDEX idx_saga_state (state=? AND updated_at<?)") {
		t.Fatalf("plan %q: want one SEARCH of idx_saga_state on (state, updated_at), no scan, no temp b-tree", got)
	}
}
