package sqlite_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/sqlite/sqlitetest"
	"github.com/prsaga/prsaga/services/ledger"
	ledgersqlite "github.com/prsaga/prsaga/services/ledger/sqlite"
)

// The watchdog reads only through idx_saga_state: a range search, no
// scan of pr_saga and no sort (design §4: never a full scan).
func TestStuckQueryUsesTheStateIndex(t *testing.T) {
	db := sqlitetest.Open(t, ledgersqlite.Migrations)
	seed(t, ledgersqlite.NewStore(db))
	rows, err := db.Reader().Query("EXPLAIN QUERY PLAN "+ledgersqlite.StuckQuery, "MERGING", 1, 100)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	got := strings.Join(plan, "; ")
	if len(plan) != 1 || !strings.Contains(got, "SEARCH pr_saga USING INDEX idx_saga_state (state=? AND updated_at<?)") {
		t.Fatalf("plan %q: want one SEARCH of idx_saga_state on (state, updated_at), no scan, no temp b-tree", got)
	}
}

func TestStuckReturnsOldestFirstWithinTheLimit(t *testing.T) {
	s := ledgersqlite.NewStore(sqlitetest.Open(t, ledgersqlite.Migrations))
	rows := seed(t, s) // VALIDATING, MERGED, MERGE_FAILED; updated t0 .. t0+59s
	cut := t0.Add(30 * time.Second)
	cutoffs := ledger.Timeouts{}.Cutoffs(cut.Add(ledger.DefaultStepTimeout))
	got, err := s.Stuck(context.Background(), cutoffs, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, r := range rows {
		if r.State == contracts.StateValidating && r.UpdatedAt.Before(cut) {
			want = append(want, r.PRID)
		}
	}
	var ids []string
	for i, r := range got {
		ids = append(ids, r.PRID)
		if i > 0 && r.UpdatedAt.Before(got[i-1].UpdatedAt) {
			t.Fatalf("not oldest first at %d", i)
		}
	}
	sorted := slices.Clone(ids)
	slices.Sort(sorted)
	slices.Sort(want)
	if !slices.Equal(sorted, want) {
		t.Fatalf("stuck %v, want %v", sorted, want)
	}
	few, err := s.Stuck(context.Background(), cutoffs, 3)
	if err != nil || len(few) != 3 || few[0].PRID != got[0].PRID {
		t.Fatalf("limit 3: %d rows, %v", len(few), err)
	}
}
