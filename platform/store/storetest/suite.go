package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/store"
)

// T0 is where the suites' clocks start.
var T0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// Run is the platform's part of the suite: transactions, the outbox and
// the inbox, on databases from open.
func Run(t *testing.T, open Opener) {
	t.Run("CommitAndRollback", func(t *testing.T) { testCommitAndRollback(t, open) })
	t.Run("OutboxOrderAndContent", func(t *testing.T) { testOutboxOrderAndContent(t, open) })
	t.Run("OutboxNoRowSkipped", func(t *testing.T) { testOutboxNoRowSkipped(t, open) })
	t.Run("OutboxLateCommit", func(t *testing.T) { testOutboxLateCommit(t, open) })
	t.Run("OutboxDuplicatesHarmless", func(t *testing.T) { testOutboxDuplicates(t, open) })
	t.Run("OutboxStats", func(t *testing.T) { testOutboxStats(t, open) })
	t.Run("Committed", func(t *testing.T) { testCommitted(t, open) })
	t.Run("InboxDedupeKeepsTxUsable", func(t *testing.T) { testInboxDedupe(t, open) })
	t.Run("InboxOneWinner", func(t *testing.T) { testInboxOneWinner(t, open) })
	t.Run("InboxExpiry", func(t *testing.T) { testInboxExpiry(t, open) })
	t.Run("InboxProcessedAny", func(t *testing.T) { testInboxProcessedAny(t, open) })
}

// openAtT0 opens a database whose clock starts at T0.
func openAtT0(t *testing.T, open Opener) (store.DB, *Clock) {
	t.Helper()
	clk := NewClock(T0)
	return open(t, clk.Now), clk
}

// Context is a test's context, bounded in time.
func Context(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// Request is a valid merge request, the platform tests' sample.
func Request() contracts.Request {
	return contracts.Request{
		PRID: "acme/widgets#1", Repo: "acme/widgets", PRNumber: 1,
		SourceBranch: "feature", TargetBranch: "main",
		HeadSHA: "0123456789abcdef0123456789abcdef01234567", Strategy: "merge", RequestedBy: "alice",
	}
}

// Requested builds a merge-requested event of Request with the given id.
func Requested(t testing.TB, id string) *event.Event {
	t.Helper()
	e, err := contracts.NewRequested(id, "https://forge.example/acme", T0, Request(), "")
	if err != nil {
		t.Fatalf("build requested: %v", err)
	}
	return e
}

// Emit commits evs to db's outbox in one transaction.
func Emit(t *testing.T, db store.DB, evs ...*event.Event) {
	t.Helper()
	if err := db.Update(Context(t), func(tx store.Tx) error { return tx.Emit(evs...) }); err != nil {
		t.Fatalf("emit: %v", err)
	}
}

// UnsentIDs lists the ids of up to limit unsent rows, oldest first.
func UnsentIDs(t *testing.T, db store.DB, limit int) []string {
	t.Helper()
	rows, err := db.Unsent(Context(t), limit)
	if err != nil {
		t.Fatalf("unsent: %v", err)
	}
	ids := []string{}
	for _, r := range rows {
		ids = append(ids, r.ID)
	}
	return ids
}

func markSent(t *testing.T, db store.DB, ids ...string) {
	t.Helper()
	if err := db.MarkSent(Context(t), ids); err != nil {
		t.Fatalf("mark sent %v: %v", ids, err)
	}
}

func testCommitAndRollback(t *testing.T, open Opener) {
	db, _ := openAtT0(t, open)
	ctx := Context(t)
	boom := errors.New("boom")
	ran := 0
	err := db.Update(ctx, func(tx store.Tx) error {
		tx.AfterCommit(func() { ran++ })
		if _, err := tx.MarkProcessed("c", "rolled-back"); err != nil {
			return err
		}
		if err := tx.Emit(Requested(t, "rolled-back")); err != nil {
			return err
		}
		return fmt.Errorf("handler: %w", boom)
	})
	if !errors.Is(err, boom) {
		t.Fatalf("update returning an error: got %v, want it wrapped as returned", err)
	}
	if ran != 0 {
		t.Errorf("AfterCommit of a rolled-back transaction ran %d times", ran)
	}
	if ids := UnsentIDs(t, db, 10); len(ids) != 0 {
		t.Errorf("rolled-back emit left outbox rows %v", ids)
	}
	if seen, err := db.Processed(ctx, "c", "rolled-back"); err != nil || seen {
		t.Errorf("rolled-back MarkProcessed: Processed = %v, %v; want false", seen, err)
	}

	var txNow time.Time
	err = db.Update(ctx, func(tx store.Tx) error {
		if tx.Context() == nil {
			return errors.New("tx has no context")
		}
		txNow = tx.Now()
		tx.AfterCommit(func() { ran++ })
		if err := tx.Emit(Requested(t, "committed")); err != nil {
			return err
		}
		if ids := UnsentIDs(t, db, 10); len(ids) != 0 {
			t.Errorf("unsent inside the emitting tx = %v, want none (not committed)", ids)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if ran != 1 {
		t.Errorf("AfterCommit ran %d times after one commit, want 1", ran)
	}
	if !txNow.Equal(T0) {
		t.Errorf("tx.Now = %v, want the store clock's %v", txNow, T0)
	}
	if ids := UnsentIDs(t, db, 10); !slices.Equal(ids, []string{"committed"}) {
		t.Errorf("unsent after commit = %v, want [committed]", ids)
	}
	if !db.Now().Equal(T0) {
		t.Errorf("db.Now = %v, want %v", db.Now(), T0)
	}
}

func testOutboxOrderAndContent(t *testing.T, open Opener) {
	db, clk := openAtT0(t, open)
	e1, e2, e3 := Requested(t, "e-1"), Requested(t, "e-2"), Requested(t, "e-3")
	Emit(t, db, e1)
	clk.Advance(time.Second)
	Emit(t, db, e2, e3)
	rows, err := db.Unsent(Context(t), 10)
	if err != nil {
		t.Fatal(err)
	}
	if ids := UnsentIDs(t, db, 10); !slices.Equal(ids[:1], []string{"e-1"}) || len(ids) != 3 {
		t.Fatalf("unsent = %v, want e-1 first, then e-2 and e-3", ids)
	}
	r := rows[0]
	if r.Subject != contracts.SubjectMergeRequested {
		t.Errorf("subject = %q, want %q", r.Subject, contracts.SubjectMergeRequested)
	}
	if !r.CreatedAt.Equal(T0) {
		t.Errorf("created_at = %v, want the tx's time %v", r.CreatedAt, T0)
	}
	msg := bus.RowMsg(r)
	if got := msg.Header.Get(bus.HeaderMsgID); got != "e-1" {
		t.Errorf("Nats-Msg-Id = %q, want e-1", got)
	}
	got, err := bus.Decode(msg.Header, msg.Data)
	if err != nil {
		t.Fatalf("the outbox row does not decode: %v", err)
	}
	if got.ID() != e1.ID() || got.Type() != e1.Type() || !bytes.Equal(got.Data(), e1.Data()) {
		t.Errorf("decoded row: id=%q type=%q data=%s, want %q %q %s", got.ID(), got.Type(), got.Data(), e1.ID(), e1.Type(), e1.Data())
	}
	if ids := UnsentIDs(t, db, 1); !slices.Equal(ids, []string{"e-1"}) {
		t.Errorf("unsent with limit 1 = %v, want [e-1]", ids)
	}
	if err := db.Update(Context(t), func(tx store.Tx) error {
		e := Requested(t, "bad")
		e.SetType("prsaga.unknown.v1")
		return tx.Emit(e)
	}); err == nil || !strings.Contains(err.Error(), "prsaga.unknown.v1") {
		t.Errorf("emitting an event of an unknown type: %v, want an error naming the type", err)
	}
	if ids := UnsentIDs(t, db, 10); len(ids) != 3 {
		t.Errorf("a failed emit changed the outbox: %v", ids)
	}
	nodata := event.New()
	nodata.SetID("e-nodata")
	nodata.SetSource("/prsaga/ledger")
	nodata.SetType(contracts.TypeTimedOut)
	Emit(t, db, &nodata)
	rows, err = db.Unsent(Context(t), 10)
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(rows, func(r store.OutboxRow) bool { return r.ID == "e-nodata" }); i < 0 || len(rows[i].Body) != 0 {
		t.Errorf("an event without data: rows %+v, want one with an empty body", rows)
	}
}

// testOutboxNoRowSkipped drains the outbox the way the relay does — list,
// mark sent, list again — with a limit smaller than the backlog and new
// rows arriving meanwhile: every row is listed, none twice after it was
// marked.
func testOutboxNoRowSkipped(t *testing.T, open Opener) {
	db, clk := openAtT0(t, open)
	want := map[string]bool{}
	next := 0
	add := func(n int) {
		for i := 0; i < n; i++ {
			id := fmt.Sprintf("r-%03d", next)
			next++
			want[id] = true
			clk.Advance(time.Millisecond)
			Emit(t, db, Requested(t, id))
		}
	}
	add(25)
	got := map[string]bool{}
	for round := 0; round < 50; round++ {
		ids := UnsentIDs(t, db, 7)
		if len(ids) == 0 {
			break
		}
		for _, id := range ids {
			if got[id] {
				t.Fatalf("round %d: %s listed again after it was marked sent", round, id)
			}
			got[id] = true
		}
		markSent(t, db, ids...)
		if round == 1 {
			add(10)
		}
	}
	if len(got) != len(want) {
		var missing []string
		for id := range want {
			if !got[id] {
				missing = append(missing, id)
			}
		}
		slices.Sort(missing)
		t.Fatalf("drained %d of %d rows; never listed: %v", len(got), len(want), missing)
	}
}

// testOutboxLateCommit: a transaction that began (and stamped its rows)
// before rows that were already relayed commits late. A relay with an
// "after the last seen" cursor would skip it; ours must list it.
func testOutboxLateCommit(t *testing.T, open Opener) {
	clk := NewClock(T0.Add(time.Hour))
	db := open(t, clk.Now)
	Emit(t, db, Requested(t, "early-commit"))
	if ids := UnsentIDs(t, db, 10); !slices.Equal(ids, []string{"early-commit"}) {
		t.Fatalf("unsent = %v, want [early-commit]", ids)
	}
	markSent(t, db, "early-commit")
	clk.Set(T0) // the slow transaction's clock: before the row already relayed
	Emit(t, db, Requested(t, "late-commit"))
	if ids := UnsentIDs(t, db, 10); !slices.Equal(ids, []string{"late-commit"}) {
		t.Fatalf("after a late commit with an older created_at, unsent = %v, want [late-commit]", ids)
	}
}

func testOutboxDuplicates(t *testing.T, open Opener) {
	db, clk := openAtT0(t, open)
	e := Requested(t, "dup")
	if err := db.Update(Context(t), func(tx store.Tx) error {
		if err := tx.Emit(e); err != nil {
			return err
		}
		return tx.Emit(e) // twice in one transaction
	}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	Emit(t, db, e) // again in a later transaction: kept as it is
	rows, err := db.Unsent(Context(t), 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].ID != "dup" || !rows[0].CreatedAt.Equal(T0) {
		t.Fatalf("unsent after three emits of one id = %+v, want one row created at %v", rows, T0)
	}
	markSent(t, db, "dup")
	markSent(t, db, "dup")         // twice: harmless
	markSent(t, db, "never-there") // unknown: harmless
	markSent(t, db)                // nothing: harmless
	Emit(t, db, e)                 // after it was sent: still kept as it is (sent)
	if ids := UnsentIDs(t, db, 10); len(ids) != 0 {
		t.Errorf("re-emitting a sent event made it unsent again: %v", ids)
	}
}

func testOutboxStats(t *testing.T, open Opener) {
	db, clk := openAtT0(t, open)
	ctx := Context(t)
	if n, age, err := db.OutboxStats(ctx); err != nil || n != 0 || age != 0 {
		t.Fatalf("stats of an empty outbox = %d, %s, %v; want 0, 0", n, age, err)
	}
	Emit(t, db, Requested(t, "a"))
	clk.Advance(time.Minute)
	Emit(t, db, Requested(t, "b"))
	clk.Advance(time.Minute)
	n, age, err := db.OutboxStats(ctx)
	if err != nil || n != 2 || age != 2*time.Minute {
		t.Fatalf("stats = %d, %s, %v; want 2 pending, oldest 2m", n, age, err)
	}
	markSent(t, db, "a")
	n, age, err = db.OutboxStats(ctx)
	if err != nil || n != 1 || age != time.Minute {
		t.Fatalf("stats after marking the oldest = %d, %s, %v; want 1 pending, oldest 1m", n, age, err)
	}
}

// Committed signals a commit that emitted, once for commits the relay has
// not taken yet (the relay reads all unsent rows), and nothing else.
func testCommitted(t *testing.T, open Opener) {
	ctx := Context(t)
	db := open(t, NewClock(T0).Now)
	signalled := func() bool {
		select {
		case <-db.Committed():
			return true
		default:
			return false
		}
	}
	signalled() // whatever opening did
	if err := db.Update(ctx, func(tx store.Tx) error {
		_, err := tx.MarkProcessed("c", "no-emit")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if signalled() {
		t.Error("Committed signalled after a transaction that emitted nothing")
	}
	errNo := errors.New("no")
	_ = db.Update(ctx, func(tx store.Tx) error {
		if err := tx.Emit(Requested(t, "e-rolled-back")); err != nil {
			return err
		}
		return errNo
	})
	if signalled() {
		t.Error("Committed signalled after a rolled-back transaction")
	}
	Emit(t, db, Requested(t, "e-1"))
	Emit(t, db, Requested(t, "e-2"))
	if !signalled() {
		t.Fatal("Committed not signalled after a transaction that emitted")
	}
	if signalled() {
		t.Error("Committed signalled twice for two commits; want one pending signal (non-blocking)")
	}
}

func testInboxDedupe(t *testing.T, open Opener) {
	db := open(t, NewClock(T0).Now)
	ctx := Context(t)
	err := db.Update(ctx, func(tx store.Tx) error {
		for _, c := range []struct {
			consumer, id string
			want         bool
		}{{"validator", "e-1", true}, {"validator", "e-1", false}, {"ledger", "e-1", true}} {
			first, err := tx.MarkProcessed(c.consumer, c.id)
			if err != nil {
				return err
			}
			if first != c.want {
				return fmt.Errorf("MarkProcessed(%s, %s) first = %v, want %v", c.consumer, c.id, first, c.want)
			}
		}
		return tx.Emit(Requested(t, "after-duplicate")) // still usable
	})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if ids := UnsentIDs(t, db, 10); !slices.Equal(ids, []string{"after-duplicate"}) {
		t.Errorf("the write after a duplicate was not committed: unsent = %v", ids)
	}
	for _, c := range []struct {
		consumer, id string
		want         bool
	}{{"validator", "e-1", true}, {"ledger", "e-1", true}, {"merger", "e-1", false}, {"validator", "e-2", false}} {
		if got, err := db.Processed(ctx, c.consumer, c.id); err != nil || got != c.want {
			t.Errorf("Processed(%s, %s) = %v, %v; want %v", c.consumer, c.id, got, err, c.want)
		}
	}
	err = db.Update(ctx, func(tx store.Tx) error {
		first, err := tx.MarkProcessed("validator", "e-1")
		if err != nil {
			return err
		}
		if first {
			return errors.New("MarkProcessed in a later transaction: first = true, want false")
		}
		return tx.Emit(Requested(t, "later"))
	})
	if err != nil {
		t.Fatalf("later update: %v", err)
	}
	if ids := UnsentIDs(t, db, 10); !slices.Contains(ids, "later") {
		t.Errorf("the write after a duplicate in a later transaction was not committed: unsent = %v", ids)
	}
}

// testInboxOneWinner: concurrent transactions mark the same event; exactly
// one commits as the first (SQLite serialises the writers; YDB aborts all
// but one at commit and DoTx re-runs them, and they then see the winner).
func testInboxOneWinner(t *testing.T, open Opener) {
	db := open(t, NewClock(T0).Now)
	ctx := Context(t)
	const n = 8
	var mu sync.Mutex
	winners := 0
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Go(func() {
			var won bool
			err := db.Update(ctx, func(tx store.Tx) error {
				first, err := tx.MarkProcessed("ledger", "contended")
				won = first // the last attempt's answer is the one that committed
				if err != nil || !first {
					return err
				}
				return tx.Emit(Requested(t, fmt.Sprintf("winner-%d", i)))
			})
			if err != nil {
				errs <- err
				return
			}
			if won {
				mu.Lock()
				winners++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent update: %v", err)
	}
	if winners != 1 {
		t.Errorf("%d transactions committed as the first to process the event, want exactly 1", winners)
	}
	if ids := UnsentIDs(t, db, 100); len(ids) != 1 {
		t.Errorf("outbox rows of the winners = %v, want exactly one", ids)
	}
}

func testInboxExpiry(t *testing.T, open Opener) {
	db, clk := openAtT0(t, open)
	ctx := Context(t)
	mark := func(id string) {
		t.Helper()
		if err := db.Update(ctx, func(tx store.Tx) error {
			_, err := tx.MarkProcessed("validator", id)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	mark("old")
	clk.Advance(2 * time.Hour)
	mark("new")
	clk.Advance(time.Minute)
	n, err := db.ExpireInbox(ctx, time.Hour)
	if err != nil || n != 1 {
		t.Fatalf("ExpireInbox = %d, %v; want 1 row", n, err)
	}
	for id, want := range map[string]bool{"old": false, "new": true} {
		if got, err := db.Processed(ctx, "validator", id); err != nil || got != want {
			t.Errorf("Processed(%s) after expiry = %v, %v; want %v", id, got, err, want)
		}
	}
	if n, err := db.ExpireInbox(ctx, time.Hour); err != nil || n != 0 {
		t.Errorf("second ExpireInbox = %d, %v; want 0", n, err)
	}
}

// testInboxProcessedAny: the runner's batch pre-check (runner.InboxReader),
// which every adapter implements: one read answers which ids of a batch the
// consumer already handled — of this consumer only, nothing for unknown ids.
func testInboxProcessedAny(t *testing.T, open Opener) {
	db := open(t, NewClock(T0).Now)
	ir, ok := db.(interface {
		ProcessedAny(ctx context.Context, consumer string, eventIDs []string) (map[string]bool, error)
	})
	if !ok {
		t.Fatalf("%T has no ProcessedAny: the runner would check a batch's inbox one read per event", db)
	}
	ctx := Context(t)
	if err := db.Update(ctx, func(tx store.Tx) error {
		for _, k := range [][2]string{{"validator", "e-1"}, {"validator", "e-3"}, {"ledger", "e-2"}} {
			if _, err := tx.MarkProcessed(k[0], k[1]); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	seen, err := ir.ProcessedAny(ctx, "validator", []string{"e-1", "e-2", "e-3", "e-4"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"e-1": true, "e-3": true}
	if len(seen) != len(want) || !seen["e-1"] || !seen["e-3"] {
		t.Errorf("ProcessedAny(validator, e-1..e-4) = %v, want %v", seen, want)
	}
	if seen, err := ir.ProcessedAny(ctx, "validator", nil); err != nil || len(seen) != 0 {
		t.Errorf("ProcessedAny of no ids = %v, %v; want an empty answer", seen, err)
	}
}
