package service_test

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/natsembed/natstest"
	"github.com/prsaga/prsaga/platform/service"
	"github.com/prsaga/prsaga/platform/store"
	"github.com/prsaga/prsaga/platform/store/storetest"
	"github.com/prsaga/prsaga/platform/telemetry"
)

// A running service prunes its own tables (Spec.Prune) in the rounds that
// prune the inbox and the outbox, with their age, batch after batch while
// batches come back full, and counts what they deleted.
func TestRunningServicePrunesItsOwnTables(t *testing.T) {
	testOwnTables(t, false)
}

// On a store that prunes its own inbox and outbox (YDB's TTLs) the rounds
// run for the service's own tables alone.
func TestOwnTablesPrunedOnAStoreWithoutPruner(t *testing.T) {
	testOwnTables(t, true)
}

// notPruner is a store whose inbox and outbox the platform does not prune.
type notPruner struct{ store.DB }

func testOwnTables(t *testing.T, ttls bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, b := natstest.Start(t, bus.Config{})
	clk := storetest.NewClock(storetest.T0)
	sdb := openAt(t, clk)
	mark(t, sdb, "old")
	clk.Advance(24 * time.Hour)
	var db store.DB = sdb
	if ttls {
		db = notPruner{sdb}
	}
	tel, err := telemetry.New(ctx, telemetry.Config{})
	if err != nil {
		t.Fatal(err)
	}
	left := atomic.Int64{}
	left.Store(7)
	var badAge atomic.Bool
	del := func(ctx context.Context, olderThan time.Duration, limit int) (int64, error) {
		if olderThan != 90*time.Hour {
			badAge.Store(true)
		}
		n := min(left.Load(), int64(limit))
		left.Add(-n)
		return n, nil
	}
	spec := service.Spec{Name: contracts.ServiceNotifier, DB: db,
		Prune: []service.TablePrune{{Table: "delivery", Age: 90 * time.Hour, Delete: del}}}
	run, err := service.Start(ctx, spec, b, slog.New(slog.DiscardHandler), service.Options{Telemetry: tel,
		Retention: service.Retention{Inbox: time.Hour, Sent: time.Hour, Interval: 10 * time.Millisecond, Batch: 2}})
	if err != nil {
		t.Fatal(err)
	}
	defer run.Stop()
	for counter(t, tel, telemetry.MetricPruned, map[string]string{"service": contracts.ServiceNotifier, "table": "delivery"}) != 7 {
		select {
		case <-ctx.Done():
			t.Fatalf("delivery rows pruned: %v within 30s, want 7", counter(t, tel, telemetry.MetricPruned, map[string]string{"service": contracts.ServiceNotifier, "table": "delivery"}))
		case <-time.After(10 * time.Millisecond):
		}
	}
	if badAge.Load() {
		t.Error("the table's Delete was called with another age than its own")
	}
	// The inbox entry is a day old, past the hour of retention.
	if ok, err := sdb.Processed(ctx, "validator", "old"); err != nil || ok == !ttls {
		t.Errorf("inbox entry past its retention (store prunes itself: %v): processed %v, %v", ttls, ok, err)
	}
}
