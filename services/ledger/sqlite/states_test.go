package sqlite_test

import (
	"context"
	"strings"
	"testing"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/sqlite/sqlitetest"
	ledgersqlite "github.com/prsaga/prsaga/services/ledger/sqlite"
)

// StateCounts counts each state and finds its oldest row, from the
// (state, updated_at) index alone.
func TestStateCountsCountsAndFindsTheOldest(t *testing.T) {
	db := sqlitetest.Open(t, ledgersqlite.Migrations)
	s := ledgersqlite.NewStore(db)
	rows := seed(t, s)
	got, err := s.StateCounts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := map[contracts.State]int{}
	oldest := map[contracts.State]int64{}
	for _, r := range rows {
		want[r.State]++
		if o, ok := oldest[r.State]; !ok || r.UpdatedAt.UnixMicro() < o {
			oldest[r.State] = r.UpdatedAt.UnixMicro()
		}
	}
	if len(got) != len(want) {
		t.Fatalf("states %v, want %v", got, want)
	}
	for st, n := range want {
		if got[st].Sagas != n || got[st].Oldest.UnixMicro() != oldest[st] {
			t.Errorf("%s: got %+v, want %d sagas, oldest %d", st, got[st], n, oldest[st])
		}
	}
	var plan strings.Builder
	r, err := db.Reader().Query(`EXPLAIN QUERY PLAN SELECT state, count(*), min(updated_at) FROM pr_saga GROUP BY state`)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for r.Next() {
		var id, parent, notused int
		var detail string
		if err := r.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		plan.WriteString(detail + "; ")
	}
	if p := plan.String(); !strings.Contains(p, "COVERING INDEX idx_saga_state") {
		t.Errorf("plan %q, want the covering index idx_saga_state", p)
	}
}
