package sqlite_test

import (
	"context"
	"strings"
	"testing"
	"time"

	psqlite "github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/platform/sqlite/sqlitetest"
	"github.com/prsaga/prsaga/services/ledger"
	ledgersqlite "github.com/prsaga/prsaga/services/ledger/sqlite"
	"github.com/prsaga/prsaga/services/ledger/storetest"
)

// The behaviour of the store is the conformance suite's (ledger/storetest,
// run on SQLite by its TestStores); the tests here hold what only SQLite
// has: query plans, triggers, the number of the last transition read with
// the row, a database opened without the migrations.

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// queryPlan is the detail column of EXPLAIN QUERY PLAN q, a row a line.
func queryPlan(t *testing.T, db *psqlite.DB, q string, args ...any) []string {
	t.Helper()
	plan, err := psqlite.QueryPlan(context.Background(), db.Reader(), q, args...)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// newStore is the ledger's store on a fresh database opened with its
// migrations.
func newStore(t *testing.T) *ledger.Store {
	t.Helper()
	return ledgersqlite.NewStore(sqlitetest.Open(t, ledgersqlite.Migrations))
}

// seeded opens a database with the ledger's migrations, holding the
// conformance suite's seed sagas.
func seeded(t *testing.T) *psqlite.DB {
	t.Helper()
	db := sqlitetest.Open(t, ledgersqlite.Migrations)
	storetest.Seed(t, ledgersqlite.NewStore(db))
	return db
}

// The list and the watchdog's future query are served by indexes, never a
// full scan of pr_saga.
func TestQueriesUseIndexes(t *testing.T) {
	db := seeded(t)
	cur := " AND (updated_at, pr_id) < (?, ?)"
	order := " ORDER BY updated_at DESC, pr_id DESC LIMIT 10"
	for _, c := range []struct {
		q, index string
		args     []any
	}{
		{"SELECT * FROM pr_saga WHERE state = ?" + cur + order, "idx_saga_state", []any{"MERGED", 1, "a/b#1"}},
		{"SELECT * FROM pr_saga WHERE repo = ?" + cur + order, "idx_saga_repo", []any{"a/b", 1, "a/b#1"}},
		{"SELECT * FROM pr_saga WHERE 1" + cur + order, "idx_saga_updated", []any{1, "a/b#1"}},
		{"SELECT * FROM pr_saga WHERE state = ? AND updated_at < ? ORDER BY updated_at LIMIT 100", "idx_saga_state", []any{"MERGING", 1}},
	} {
		p := strings.Join(queryPlan(t, db, c.q, c.args...), "; ")
		if !strings.Contains(p, c.index) || strings.Contains(p, "TEMP B-TREE") {
			t.Errorf("%s\nplan: %s\nwant %s with no sort", c.q, p, c.index)
		}
	}
}

func TestCheckNeedsMigrations(t *testing.T) {
	bare := ledgersqlite.NewStore(sqlitetest.Open(t))
	if err := bare.Check(context.Background()); err == nil {
		t.Fatal("Check passed on a database without the ledger's tables")
	}
}
