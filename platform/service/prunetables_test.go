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
	"github.com/prsaga/prsaga/platform/store/storetest"
	"github.com/prsaga/prsaga/platform/telemetry"
)

// A running service prunes its own tables (Spec.Prune) in the rounds that
// prune the inbox and the outbox, with their age, batch after batch while
// batches come back full, and counts what they deleted.
func TestRunningServicePrunesItsOwnTables(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, b := natstest.Start(t, bus.Config{})
	db := openAt(t, storetest.NewClock(storetest.T0))
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
}
