package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prsaga/prsaga/platform/store"
	"github.com/prsaga/prsaga/platform/store/storetest"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/natsembed/natstest"
	"github.com/prsaga/prsaga/platform/outbox"
	"github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/platform/sqlite/sqlitetest"
)

// testContext is a test's context, bounded in time.
var testContext = storetest.Context

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// busDB is a bus on an embedded NATS and a fresh database for a relay.
func busDB(t *testing.T) (*bus.Bus, *sqlite.DB) {
	t.Helper()
	_, b := natstest.Start(t, bus.Config{})
	return b, sqlitetest.Open(t)
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	natstest.WaitFor(t, within, what, cond)
}

func emit(t *testing.T, db *sqlite.DB, ids ...string) {
	t.Helper()
	err := db.Update(testContext(t), func(tx store.Tx) error {
		for _, id := range ids {
			if err := tx.Emit(requested(t, id)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("emit: %v", err)
	}
}

func streamMsgs(t *testing.T, b *bus.Bus) uint64 {
	t.Helper()
	return natstest.Msgs(t, testContext(t), b, contracts.Stream)
}

// streamIDs lists the event ids in PRSAGA, in stream order.
func streamIDs(t *testing.T, b *bus.Bus) []string {
	t.Helper()
	ctx := testContext(t)
	s, err := b.JS.Stream(ctx, contracts.Stream)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for seq := uint64(1); seq <= streamMsgs(t, b); seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			t.Fatalf("get msg %d: %v", seq, err)
		}
		e, err := bus.Decode(m.Header, m.Data)
		if err != nil {
			t.Fatalf("decode msg %d: %v", seq, err)
		}
		ids = append(ids, e.ID())
	}
	return ids
}

func pending(t *testing.T, db *sqlite.DB) int {
	t.Helper()
	n, _, err := db.OutboxStats(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// run starts r until the test ends.
func run(t *testing.T, r *outbox.Relay) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if ok, err := stopped(done); !ok {
			t.Error("relay did not stop within 10s of cancellation")
		} else if err != nil {
			t.Errorf("relay Run: %v", err)
		}
	})
}

// stopped waits for the result of a cancelled Run; ok is false when it
// did not come within 10s.
func stopped(done <-chan error) (ok bool, err error) {
	select {
	case err := <-done:
		return true, err
	case <-time.After(10 * time.Second):
		return false, nil
	}
}

// flaky fails the publishes whose 1-based call numbers are in fail; with
// publishFirst it publishes before failing, as when the ack is lost.
type flaky struct {
	pub          outbox.Publisher
	fail         map[int64]bool
	publishFirst bool
	calls        atomic.Int64
}

var errInjected = errors.New("injected publish failure")

func (f *flaky) PublishMsg(ctx context.Context, msg *nats.Msg) (*jetstream.PubAck, error) {
	n := f.calls.Add(1)
	if !f.fail[n] {
		return f.pub.PublishMsg(ctx, msg)
	}
	if f.publishFirst {
		if _, err := f.pub.PublishMsg(ctx, msg); err != nil {
			return nil, err
		}
	}
	return nil, errInjected
}

func TestRelayPublishesAndMarksSent(t *testing.T) {
	b, db := busDB(t)
	run(t, &outbox.Relay{Store: db, Pub: b, Log: testLogger(t), Poll: 20 * time.Millisecond})
	emit(t, db, "e-1", "e-2")
	emit(t, db, "e-3")
	waitFor(t, 10*time.Second, "3 messages in PRSAGA and none unsent", func() bool {
		return streamMsgs(t, b) == 3 && pending(t, db) == 0
	})
	if got := fmt.Sprint(streamIDs(t, b)); got != "[e-1 e-2 e-3]" {
		t.Errorf("stream ids: got %s, want [e-1 e-2 e-3]", got)
	}
}

func TestFlushFailureKeepsRowUnsent(t *testing.T) {
	ctx := testContext(t)
	b, db := busDB(t)
	pub := &flaky{pub: b, fail: map[int64]bool{2: true}}
	r := &outbox.Relay{Store: db, Pub: pub, Log: testLogger(t)}
	emit(t, db, "e-1", "e-2", "e-3")

	n, err := r.Flush(ctx)
	if !errors.Is(err, errInjected) {
		t.Fatalf("first flush: got error %v, want the publish failure", err)
	}
	if n != 1 {
		t.Errorf("first flush marked %d rows, want 1 (the one published before the failure)", n)
	}
	if got := pending(t, db); got != 2 {
		t.Errorf("unsent after a failed publish: got %d, want 2 (the failed row and the one after it)", got)
	}
	if got := streamMsgs(t, b); got != 1 {
		t.Errorf("PRSAGA messages after the failed round: got %d, want 1", got)
	}

	n, err = r.Flush(ctx)
	if err != nil || n != 2 {
		t.Fatalf("second flush: got %d, %v; want 2, nil", n, err)
	}
	if got := pending(t, db); got != 0 {
		t.Errorf("unsent after the retry: got %d, want 0", got)
	}
	if got := fmt.Sprint(streamIDs(t, b)); got != "[e-1 e-2 e-3]" {
		t.Errorf("stream ids: got %s, want [e-1 e-2 e-3] (nothing lost, nothing twice)", got)
	}
	if n, err := r.Flush(ctx); n != 0 || err != nil {
		t.Errorf("flush of an empty outbox: got %d, %v; want 0, nil", n, err)
	}
}

func TestRelayRetriesAfterFailedPublish(t *testing.T) {
	b, db := busDB(t)
	// The first publish reaches JetStream but its ack is lost: the row stays
	// unsent, is published again, and JetStream drops the repeat.
	pub := &flaky{pub: b, fail: map[int64]bool{1: true}, publishFirst: true}
	emit(t, db, "e-1")
	run(t, &outbox.Relay{Store: db, Pub: pub, Log: testLogger(t), Poll: time.Hour})
	waitFor(t, 10*time.Second, "the row to be marked sent after the retry", func() bool {
		return pending(t, db) == 0
	})
	if calls := pub.calls.Load(); calls != 2 {
		t.Errorf("publish calls: got %d, want 2 (one failed, one retry)", calls)
	}
	if got := fmt.Sprint(streamIDs(t, b)); got != "[e-1]" {
		t.Errorf("stream ids: got %s, want [e-1] once", got)
	}
}

func TestBeforeHookFaultKeepsRowUnsent(t *testing.T) {
	ctx := testContext(t)
	b, db := busDB(t)
	var calls atomic.Int64
	r := &outbox.Relay{Store: db, Pub: b, Log: testLogger(t), Before: func(row sqlite.OutboxRow) error {
		if calls.Add(1) == 1 {
			return errInjected
		}
		return nil
	}}
	emit(t, db, "e-1")
	if _, err := r.Flush(ctx); !errors.Is(err, errInjected) {
		t.Fatalf("flush: got %v, want the injected fault", err)
	}
	if streamMsgs(t, b) != 0 || pending(t, db) != 1 {
		t.Fatalf("after a fault before publish: %d in stream, %d unsent; want 0, 1", streamMsgs(t, b), pending(t, db))
	}
	if n, err := r.Flush(ctx); n != 1 || err != nil {
		t.Fatalf("second flush: got %d, %v; want 1, nil", n, err)
	}
}

func TestTwoRelaysPublishEachEventOnce(t *testing.T) {
	b, db := busDB(t)
	var published atomic.Int64
	counting := publisherFunc(func(ctx context.Context, msg *nats.Msg) (*jetstream.PubAck, error) {
		published.Add(1)
		return b.PublishMsg(ctx, msg)
	})
	for i := 0; i < 2; i++ {
		run(t, &outbox.Relay{Store: db, Pub: counting, Log: testLogger(t), Poll: 5 * time.Millisecond, Batch: 7})
	}
	const n = 60
	var wg sync.WaitGroup
	for w := 0; w < 3; w++ {
		evs := make([]*event.Event, n/3)
		for i := range evs {
			evs[i] = requested(t, fmt.Sprintf("w%d-e%d", w, i))
		}
		wg.Go(func() {
			for _, e := range evs {
				err := db.Update(context.Background(), func(tx store.Tx) error { return tx.Emit(e) })
				if err != nil {
					t.Errorf("emit: %v", err)
				}
			}
		})
	}
	wg.Wait()
	waitFor(t, 15*time.Second, "every row sent", func() bool { return pending(t, db) == 0 })
	ids := streamIDs(t, b)
	seen := map[string]int{}
	for _, id := range ids {
		seen[id]++
	}
	if len(ids) != n || len(seen) != n {
		t.Errorf("PRSAGA: %d messages, %d distinct ids; want %d of each", len(ids), len(seen), n)
	}
	t.Logf("%d publishes for %d events (repeats died in the dedupe window)", published.Load(), n)
}

type publisherFunc func(ctx context.Context, msg *nats.Msg) (*jetstream.PubAck, error)

func (f publisherFunc) PublishMsg(ctx context.Context, msg *nats.Msg) (*jetstream.PubAck, error) {
	return f(ctx, msg)
}

// countingStore records completed Unsent calls.
type countingStore struct {
	*sqlite.DB
	unsent atomic.Int64
}

func (s *countingStore) Unsent(ctx context.Context, limit int) ([]sqlite.OutboxRow, error) {
	defer s.unsent.Add(1)
	return s.DB.Unsent(ctx, limit)
}

func TestRelayIsWokenByCommit(t *testing.T) {
	b, db := busDB(t)
	store := &countingStore{DB: db}
	run(t, &outbox.Relay{Store: store, Pub: b, Log: testLogger(t), Poll: time.Hour})
	// Once the first (empty) round is done the relay waits on its hour-long
	// poll or on Committed; only the latter can publish what follows.
	waitFor(t, 5*time.Second, "the relay's first round", func() bool { return store.unsent.Load() >= 1 })
	for i, id := range []string{"e-1", "e-2"} {
		emit(t, db, id)
		waitFor(t, 5*time.Second, id+" published", func() bool { return streamMsgs(t, b) == uint64(i+1) })
	}
	waitFor(t, 5*time.Second, "rows marked sent", func() bool { return pending(t, db) == 0 })
}

func TestRelayStopsOnCancel(t *testing.T) {
	b, db := busDB(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- (&outbox.Relay{Store: db, Pub: b, Log: testLogger(t)}).Run(ctx) }()
	cancel()
	ok, err := stopped(done)
	if !ok {
		t.Fatal("Run did not return within 10s of cancellation")
	}
	if err != nil {
		t.Errorf("Run after cancel: got %v, want nil", err)
	}
}

// readCountingStore records every read of the outbox table.
type readCountingStore struct {
	*sqlite.DB
	reads atomic.Int64
}

func (s *readCountingStore) Unsent(ctx context.Context, limit int) ([]sqlite.OutboxRow, error) {
	defer s.reads.Add(1)
	return s.DB.Unsent(ctx, limit)
}

func (s *readCountingStore) UnsentExcept(ctx context.Context, limit int, except []string) ([]sqlite.OutboxRow, error) {
	defer s.reads.Add(1)
	return s.DB.UnsentExcept(ctx, limit, except)
}

func TestRelayPublishesCommittedRowsWithoutReadingThem(t *testing.T) {
	b, db := busDB(t)
	store := &readCountingStore{DB: db}
	run(t, &outbox.Relay{Store: store, Pub: b, Log: testLogger(t), Poll: time.Hour})
	waitFor(t, 5*time.Second, "the relay's first round", func() bool { return store.reads.Load() >= 1 })
	before := store.reads.Load()
	ids := []string{"c-1", "c-2", "c-3"}
	for _, id := range ids {
		emit(t, db, id)
	}
	waitFor(t, 5*time.Second, "every row published and marked sent", func() bool {
		return streamMsgs(t, b) == uint64(len(ids)) && pending(t, db) == 0
	})
	if got := streamIDs(t, b); fmt.Sprint(got) != fmt.Sprint(ids) {
		t.Errorf("published %v, want %v (commit order)", got, ids)
	}
	if n := store.reads.Load() - before; n != 0 {
		t.Errorf("the relay read the outbox table %d times for rows this process committed, want 0", n)
	}
}

var requested = storetest.Requested
