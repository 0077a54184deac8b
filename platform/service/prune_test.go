package service_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/natsembed/natstest"
	"github.com/prsaga/prsaga/platform/service"
	"github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/platform/step"
	"github.com/prsaga/prsaga/platform/store"
	"github.com/prsaga/prsaga/platform/store/storetest"
	"github.com/prsaga/prsaga/platform/telemetry"
)

func openAt(t *testing.T, clk *storetest.Clock) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(storetest.Context(t), filepath.Join(t.TempDir(), "svc.sqlite"), sqlite.Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func mark(t *testing.T, db store.DB, ids ...string) {
	t.Helper()
	if err := db.Update(storetest.Context(t), func(tx store.Tx) error {
		for _, id := range ids {
			if _, err := tx.MarkProcessed("validator", id); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func sent(t *testing.T, db store.DB, ids ...string) {
	t.Helper()
	for _, id := range ids {
		storetest.Emit(t, db, storetest.Requested(t, id))
	}
	if err := db.MarkSent(storetest.Context(t), ids); err != nil {
		t.Fatal(err)
	}
}

func counter(t *testing.T, tel *telemetry.Telemetry, name string, labels map[string]string) float64 {
	t.Helper()
	fams, err := tel.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	metric:
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if labels[l.GetName()] != l.GetValue() {
					continue metric
				}
			}
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	return 0
}

// A pruning round deletes, batch by batch, the inbox entries and sent
// outbox rows older than their retention, and nothing else: not the
// recent ones, not an unsent row however old. What it removed and what is
// left are reported.
func TestPruneRound(t *testing.T) {
	clk := storetest.NewClock(storetest.T0)
	db := openAt(t, clk)
	mark(t, db, "old-1", "old-2", "old-3", "old-4", "old-5")
	sent(t, db, "sent-1", "sent-2", "sent-3")
	storetest.Emit(t, db, storetest.Requested(t, "unsent-old"))
	clk.Advance(2 * time.Hour)
	mark(t, db, "new")
	sent(t, db, "sent-new")

	tel, err := telemetry.New(context.Background(), telemetry.Config{})
	if err != nil {
		t.Fatal(err)
	}
	r := service.Retention{Inbox: time.Hour, Sent: time.Hour, Batch: 2}
	if err := service.PruneRound(storetest.Context(t), "validator", db, r, tel); err != nil {
		t.Fatal(err)
	}
	if got := counter(t, tel, telemetry.MetricPruned, map[string]string{"service": "validator", "table": "inbox"}); got != 5 {
		t.Errorf("inbox rows pruned = %v, want 5", got)
	}
	if got := counter(t, tel, telemetry.MetricPruned, map[string]string{"service": "validator", "table": "outbox"}); got != 3 {
		t.Errorf("outbox rows pruned = %v, want 3", got)
	}
	for id, want := range map[string]bool{"old-1": false, "old-5": false, "new": true} {
		if got, err := db.Processed(storetest.Context(t), "validator", id); err != nil || got != want {
			t.Errorf("Processed(%s) = %v, %v after pruning; want %v", id, got, err, want)
		}
	}
	if ids := storetest.UnsentIDs(t, db, 10); !slices.Equal(ids, []string{"unsent-old"}) {
		t.Errorf("unsent after pruning = %v, want the old unsent row kept", ids)
	}
	for what, want := range map[string]float64{"inbox_rows": 1, "outbox_rows": 2} {
		if got := counter(t, tel, telemetry.MetricStoreSize, map[string]string{"service": "validator", "what": what}); got != want {
			t.Errorf("store size %s = %v, want %v", what, got, want)
		}
	}
	if got := counter(t, tel, telemetry.MetricStoreSize, map[string]string{"service": "validator", "what": "file_bytes"}); got <= 0 {
		t.Errorf("store size file_bytes = %v, want the file's size", got)
	}
}

// A running service prunes in the background; a redelivery within the
// inbox retention is still dropped after a pruning round, and only an entry
// past it is gone (a redelivery then would be handled again: which is why
// retention may not be shorter than the stream's MaxAge).
func TestRunningServicePrunesAndStillDeduplicates(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, b := natstest.Start(t, bus.Config{})
	clk := storetest.NewClock(time.Now())
	db := openAt(t, clk)
	tel, err := telemetry.New(ctx, telemetry.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var handled atomic.Int32
	onRequested := func(ctx context.Context, env contracts.Envelope, log *slog.Logger) (step.Commit, error) {
		handled.Add(1)
		return func(tx store.Tx) error { return nil }, nil
	}
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	run, err := service.Start(ctx, service.Spec{Name: contracts.ServiceValidator, DB: db, Consumers: []service.Consumer{{
		Spec:   bus.ConsumerSpec{Durable: contracts.ConsumerValidator, Subjects: []string{contracts.SubjectMergeRequested}},
		Handle: onRequested,
	}}}, b, log, service.Options{Backoff: []time.Duration{5 * time.Millisecond}, Telemetry: tel,
		Retention: service.Retention{Inbox: time.Hour, Sent: time.Hour, Interval: 10 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(run.Stop)

	// deliver publishes the same event under a new Nats-Msg-Id each time:
	// a redelivery JetStream's own dedupe window no longer catches.
	e := storetest.Requested(t, "req-1")
	n := 0
	deliver := func() {
		t.Helper()
		msg, err := bus.Encode(contracts.SubjectMergeRequested, e)
		if err != nil {
			t.Fatal(err)
		}
		n++
		msg.Header.Set(bus.HeaderMsgID, e.ID()+"-"+string(rune('0'+n)))
		if _, err := b.PublishMsg(ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
	processed := func() bool {
		ok, err := db.Processed(ctx, contracts.ConsumerValidator, "req-1")
		return err == nil && ok
	}
	wait := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			select {
			case <-ctx.Done():
				t.Fatalf("%s: not within 30s", what)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	deliver()
	wait("first delivery handled", func() bool { return processed() && handled.Load() == 1 })
	clk.Advance(30 * time.Minute) // within the retention: rounds keep the entry
	rounds := func() float64 {
		return counter(t, tel, telemetry.MetricStoreSize, map[string]string{"service": contracts.ServiceValidator, "what": "inbox_rows"})
	}
	wait("a pruning round", func() bool { return rounds() == 1 })
	deliver()
	wait("the redelivery dropped by the inbox", func() bool {
		return counter(t, tel, telemetry.MetricEventsHandled, map[string]string{"consumer": contracts.ConsumerValidator, "outcome": "duplicate"}) == 1
	})
	if handled.Load() != 1 {
		t.Fatalf("the redelivery within the retention was handled again (%d calls)", handled.Load())
	}
	clk.Advance(time.Hour) // past it: the next round prunes the entry
	wait("the entry pruned", func() bool { return !processed() })
	if got := counter(t, tel, telemetry.MetricPruned, map[string]string{"service": contracts.ServiceValidator, "table": "inbox"}); got != 1 {
		t.Errorf("inbox rows pruned = %v, want 1", got)
	}
}
