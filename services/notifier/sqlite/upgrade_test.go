package sqlite_test

import (
	"context"
	"testing"
	"time"

	"github.com/prsaga/prsaga/platform/sqlite/sqlitetest"
	"github.com/prsaga/prsaga/platform/store"
	"github.com/prsaga/prsaga/services/notifier"
	nsqlite "github.com/prsaga/prsaga/services/notifier/sqlite"
)

// The notifier's database written by each earlier schema version opens and
// migrates today; its watchers and a run's delivery rows read as they were,
// so a retry of the run sends only to the watcher still missing, and a
// pruning round keeps the run (testdata/schema, made by go run
// ./platform/sqlite/schemafixtures).
func TestUpgradeFromEarlierVersions(t *testing.T) {
	const repo, corr = "acme/widgets", "01JDX00000000000000CORR05"
	wa, wb := notifier.WatcherID(repo, "https://hooks.example/a"), notifier.WatcherID(repo, "https://hooks.example/b")
	sqlitetest.EachFixture(t, func(t *testing.T, ctx context.Context, fixture string) {
		now := sqlitetest.FixtureTime.Add(time.Hour)
		db := sqlitetest.Upgrade(t, fixture, now, nsqlite.Migrations)
		st := &nsqlite.Store{DB: db}
		ws, err := st.Watchers(ctx, repo)
		if err != nil || len(ws) != 2 || ws[0].ID != min(wa, wb) || ws[0].Secret == "" || ws[1].URL == "" {
			t.Errorf("watchers after the upgrade: %+v, %v; want %s and %s with their URLs and secrets", ws, err, wa, wb)
		}
		want := map[string]notifier.Delivery{
			wa: {CorrelationID: corr, WatcherID: wa, Delivered: true, Attempts: 1},
			wb: {CorrelationID: corr, WatcherID: wb, Attempts: 3, LastError: "503 Service Unavailable"},
		}
		ds, err := st.Deliveries(ctx, corr)
		if err != nil || len(ds) != 2 || ds[wa] != want[wa] || ds[wb] != want[wb] {
			t.Errorf("deliveries after the upgrade: %+v, %v; want %+v", ds, err, want)
		}
		// A retry records the missing watcher; the delivered one stays.
		err = db.Update(ctx, func(stx store.Tx) error {
			tx, err := st.Bind(stx)
			if err != nil {
				return err
			}
			return notifier.RecordDeliveries(tx, []notifier.Delivery{{CorrelationID: corr, WatcherID: wb, Delivered: true, Attempts: 4}})
		})
		if err != nil {
			t.Fatal(err)
		}
		if ds, err := st.Deliveries(ctx, corr); err != nil || !ds[wa].Delivered || !ds[wb].Delivered || ds[wb].Attempts != 4 {
			t.Errorf("deliveries after a retry: %+v, %v", ds, err)
		}
		// Within the retention nothing is pruned.
		if n, err := st.PruneDeliveries(ctx, 30*24*time.Hour, 100); err != nil || n != 0 {
			t.Errorf("pruning a run of an hour ago: %d rows, %v; want none", n, err)
		}
	})
}
