// Package storetest is the notifier's part of the store conformance suite
// (platform/store/storetest): watchers and deliveries, run against every
// adapter.
package storetest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/prsaga/prsaga/platform/store"
	pstoretest "github.com/prsaga/prsaga/platform/store/storetest"
	"github.com/prsaga/prsaga/services/notifier"
	"github.com/prsaga/prsaga/services/notifier/server"
)

// Adapter is the notifier's tables on one store.
type Adapter = pstoretest.Tables[server.Store]

// Run runs the notifier's suite on the tables open gives (see Suite).
func Run(t *testing.T, open pstoretest.TablesOpener[server.Store]) {
	fresh := func(t *testing.T) Adapter { return open(t, pstoretest.NewClock(pstoretest.T0).Now) }
	t.Run("ReplaceWatchers", func(t *testing.T) { testWatchers(t, fresh(t)) })
	t.Run("Deliveries", func(t *testing.T) { testDeliveries(t, fresh(t)) })
	t.Run("BindOtherTx", func(t *testing.T) { pstoretest.BindOtherTx(t, fresh(t).Store.Bind) })
}

// Suite is the notifier's part of the store conformance suite.
var Suite = pstoretest.Suite[server.Store]{SQLite: server.Module.SQLite, YDB: server.Module.YDB, Adapter: server.Adapter, Run: Run}

func watcher(repo, url string) notifier.Watcher {
	return notifier.Watcher{ID: notifier.WatcherID(repo, url), Repo: repo, URL: url, Secret: "s-" + url}
}

func testWatchers(t *testing.T, a Adapter) {
	ctx := pstoretest.Context(t)
	w1, w2, w3 := watcher("acme/widgets", "https://a.example/hook"), watcher("acme/widgets", "https://b.example/hook"), watcher("acme/widgets", "https://c.example/hook")
	other := watcher("acme/gadgets", "https://a.example/hook")
	if got, err := a.Store.Watchers(ctx, "acme/widgets"); err != nil || len(got) != 0 {
		t.Fatalf("watchers of a new repo = %v, %v; want none", got, err)
	}
	if err := a.Store.ReplaceWatchers(ctx, "acme/gadgets", []notifier.Watcher{other}); err != nil {
		t.Fatal(err)
	}
	want := func(ws ...notifier.Watcher) string {
		byID := map[string]notifier.Watcher{}
		ids := []string{}
		for _, w := range ws {
			byID[w.ID] = w
			ids = append(ids, w.ID)
		}
		slices.Sort(ids)
		out := make([]notifier.Watcher, len(ids))
		for i, id := range ids {
			out[i] = byID[id]
		}
		return fmt.Sprint(out)
	}
	for _, set := range [][]notifier.Watcher{{w1, w2}, {w2, w3}, {w3}, {}} {
		if err := a.Store.ReplaceWatchers(ctx, "acme/widgets", set); err != nil {
			t.Fatal(err)
		}
		got, err := a.Store.Watchers(ctx, "acme/widgets")
		if err != nil || fmt.Sprint(got) != want(set...) {
			t.Errorf("after replacing with %d watchers: %v, %v\nwant %s", len(set), got, err, want(set...))
		}
	}
	if got, err := a.Store.Watchers(ctx, "acme/gadgets"); err != nil || fmt.Sprint(got) != want(other) {
		t.Errorf("another repo's watchers = %v, %v; want untouched %s", got, err, want(other))
	}
}

func testDeliveries(t *testing.T, a Adapter) {
	ctx := pstoretest.Context(t)
	record := func(ds ...notifier.Delivery) {
		t.Helper()
		if err := a.DB.Update(ctx, func(tx store.Tx) error { return recordDeliveries(a, tx, ds) }); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := a.Store.Deliveries(ctx, "run-1"); err != nil || len(got) != 0 {
		t.Fatalf("deliveries of a new run = %v, %v; want none", got, err)
	}
	record(
		notifier.Delivery{CorrelationID: "run-1", WatcherID: "w-a", Delivered: true, Attempts: 1},
		notifier.Delivery{CorrelationID: "run-1", WatcherID: "w-b", Delivered: false, Attempts: 3, LastError: "503"},
		notifier.Delivery{CorrelationID: "run-2", WatcherID: "w-a", Delivered: false, Attempts: 1, LastError: "timeout"},
	)
	// A retry: w-b now delivered; a late repeat of w-a's failure must not
	// undo its delivery.
	record(
		notifier.Delivery{CorrelationID: "run-1", WatcherID: "w-b", Delivered: true, Attempts: 4},
		notifier.Delivery{CorrelationID: "run-1", WatcherID: "w-a", Delivered: false, Attempts: 2, LastError: "late"},
	)
	got, err := a.Store.Deliveries(ctx, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]notifier.Delivery{
		"w-a": {CorrelationID: "run-1", WatcherID: "w-a", Delivered: true, Attempts: 2, LastError: "late"},
		"w-b": {CorrelationID: "run-1", WatcherID: "w-b", Delivered: true, Attempts: 4},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("deliveries of run-1 = %v\nwant %v", got, want)
	}
	got2, err := a.Store.Deliveries(ctx, "run-2")
	if err != nil || len(got2) != 1 || got2["w-a"].Delivered || got2["w-a"].LastError != "timeout" {
		t.Errorf("deliveries of run-2 = %v, %v; want w-a undelivered (timeout)", got2, err)
	}
	if err := a.DB.Update(ctx, func(tx store.Tx) error { return recordDeliveries(a, tx, nil) }); err != nil {
		t.Errorf("recording no deliveries: %v", err)
	}
}

// recordDeliveries records ds as the handler does: through the store's
// view of the open transaction.
func recordDeliveries(a Adapter, stx store.Tx, ds []notifier.Delivery) error {
	tx, err := a.Store.Bind(stx)
	if err != nil {
		return err
	}
	return notifier.RecordDeliveries(tx, ds)
}
