package server_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/prsaga/prsaga/platform/service"
	psqlite "github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/platform/store"
	"github.com/prsaga/prsaga/platform/store/storetest"
	"github.com/prsaga/prsaga/platform/telemetry"
	"github.com/prsaga/prsaga/services/notifier"
	"github.com/prsaga/prsaga/services/notifier/server"
	nsqlite "github.com/prsaga/prsaga/services/notifier/sqlite"
)

// Pruning deletes the delivery rows of runs delivered to every watcher
// whose last update is older than the retention, batch by batch, and
// counts them; it keeps a recent run, a run with a recent row, and a run
// with an undelivered row however old (its saga may be retried).
func TestDeliveryRowsPruned(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	clk := storetest.NewClock(storetest.T0)
	db, err := psqlite.Open(ctx, filepath.Join(t.TempDir(), "notifier.sqlite"), psqlite.Options{Now: clk.Now}, server.Migrations)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st := &nsqlite.Store{DB: db}
	put := func(corr, watcher string, delivered bool) {
		t.Helper()
		err := db.Update(ctx, func(stx store.Tx) error {
			tx, err := st.Bind(stx)
			if err != nil {
				return err
			}
			return tx.PutDeliveries([]notifier.Delivery{{CorrelationID: corr, WatcherID: watcher, Delivered: delivered, Attempts: 1}})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	var old []string
	for i := range 5 {
		corr := fmt.Sprintf("done-old-%d", i)
		old = append(old, corr)
		put(corr, "w1", true)
		put(corr, "w2", true)
	}
	put("failed-old", "w1", true)
	put("failed-old", "w2", false)
	put("touched-late", "w1", true)
	clk.Advance(40 * 24 * time.Hour)
	put("touched-late", "w2", true)
	put("done-new", "w1", true)
	clk.Advance(5 * 24 * time.Hour) // 45 days after the first runs, 5 after the last

	srv, err := server.New(server.Options{DB: db, RetentionDeliveries: 30 * 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	tel, err := telemetry.New(ctx, telemetry.Config{})
	if err != nil {
		t.Fatal(err)
	}
	r := service.Retention{Inbox: 192 * time.Hour, Sent: time.Hour, Batch: 3, Tables: srv.Spec().Prune}
	if err := service.PruneRound(ctx, "notifier", db, r, tel); err != nil {
		t.Fatal(err)
	}
	if got := prunedDeliveries(t, tel); got != 10 {
		t.Errorf("delivery rows pruned = %v, want 10 (5 finished old runs × 2 watchers)", got)
	}
	for _, corr := range old {
		if ds, err := st.Deliveries(ctx, corr); err != nil || len(ds) != 0 {
			t.Errorf("run %s after pruning: %v, %v; want no rows", corr, ds, err)
		}
	}
	for corr, want := range map[string]int{"failed-old": 2, "touched-late": 2, "done-new": 1} {
		if ds, err := st.Deliveries(ctx, corr); err != nil || len(ds) != want {
			t.Errorf("run %s after pruning: %v, %v; want its %d rows kept", corr, ds, err, want)
		}
	}
	// A second round finds nothing more.
	if err := service.PruneRound(ctx, "notifier", db, r, tel); err != nil {
		t.Fatal(err)
	}
	if got := prunedDeliveries(t, tel); got != 10 {
		t.Errorf("delivery rows pruned after a second round = %v, want still 10", got)
	}
}

// prunedDeliveries reads prsaga_pruned_rows_total{service="notifier",table="delivery"}.
func prunedDeliveries(t *testing.T, tel *telemetry.Telemetry) float64 {
	t.Helper()
	fams, err := tel.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != telemetry.MetricPruned {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["service"] == "notifier" && labels["table"] == "delivery" {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}
