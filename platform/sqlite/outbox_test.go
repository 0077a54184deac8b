package sqlite_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prsaga/prsaga/platform/store"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/sqlite"
)

func TestOutboxEmitUnsentMarkSent(t *testing.T) {
	ctx := testContext(t)
	db, clk := openClock(t)
	e1, e2, e3 := requested(t, "e-1"), requested(t, "e-2"), requested(t, "e-3")
	t1 := clk.Now()
	emit(t, db, e1)
	clk.Advance(time.Second)
	emit(t, db, e2, e1) // e1 again: kept as it is
	rows, err := db.Unsent(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].ID != "e-1" || rows[1].ID != "e-2" {
		t.Fatalf("unsent: got %v, want e-1, e-2 (oldest first, e-1 once)", unsentIDs(t, db, 10))
	}
	r := rows[0]
	if r.Subject != contracts.SubjectMergeRequested {
		t.Errorf("row subject: got %q, want %q", r.Subject, contracts.SubjectMergeRequested)
	}
	if !r.CreatedAt.Equal(t1) {
		t.Errorf("row created_at: got %v, want the first tx's time %v", r.CreatedAt, t1)
	}
	msg := bus.RowMsg(r)
	if got := msg.Header.Get(bus.HeaderMsgID); got != "e-1" {
		t.Errorf("row Nats-Msg-Id: got %q, want e-1", got)
	}
	got, err := bus.Decode(msg.Header, msg.Data)
	if err != nil {
		t.Fatalf("the outbox row does not decode: %v", err)
	}
	if got.ID() != e1.ID() || got.Type() != e1.Type() || !bytes.Equal(got.Data(), e1.Data()) {
		t.Errorf("decoded row: got id=%q type=%q data=%s, want %q %q %s", got.ID(), got.Type(), got.Data(), e1.ID(), e1.Type(), e1.Data())
	}

	if ids := unsentIDs(t, db, 1); len(ids) != 1 || ids[0] != "e-1" {
		t.Errorf("unsent limit 1: got %v, want [e-1]", ids)
	}
	for i := 0; i < 2; i++ { // marking twice is harmless
		if err := db.MarkSent(ctx, []string{"e-1"}); err != nil {
			t.Fatalf("mark sent %d: %v", i+1, err)
		}
	}
	if err := db.MarkSent(ctx, nil); err != nil {
		t.Errorf("mark sent of nothing: %v", err)
	}
	if ids := unsentIDs(t, db, 10); len(ids) != 1 || ids[0] != "e-2" {
		t.Errorf("unsent after marking e-1: got %v, want [e-2]", ids)
	}

	// A row committed after an Unsent call is found by the next call, even
	// when it is older than rows already sent (no cursor).
	if err := db.MarkSent(ctx, []string{"e-2"}); err != nil {
		t.Fatal(err)
	}
	err = db.Update(ctx, func(tx store.Tx) error {
		if err := tx.Emit(e3); err != nil {
			return err
		}
		if ids := unsentIDs(t, db, 10); len(ids) != 0 {
			t.Errorf("unsent inside the emitting tx: got %v, want none (not committed)", ids)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(-time.Hour) // a transaction that began long ago commits now
	emit(t, db, requested(t, "e-0"))
	if ids := unsentIDs(t, db, 10); len(ids) != 2 || ids[0] != "e-0" || ids[1] != "e-3" {
		t.Errorf("unsent after late commits: got %v, want [e-0 e-3]", ids)
	}
}

func TestEmitUnknownTypeFails(t *testing.T) {
	ctx := testContext(t)
	db, _ := openClock(t)
	e := requested(t, "e-1")
	e.SetType("prsaga.merge.bogus.v1")
	err := db.Update(ctx, func(tx store.Tx) error { return tx.Emit(e) })
	if err == nil || !strings.Contains(err.Error(), "prsaga.merge.bogus.v1") {
		t.Errorf("emit of an unknown type: got %v, want an error naming the type", err)
	}
	if ids := unsentIDs(t, db, 10); len(ids) != 0 {
		t.Errorf("unsent: got %v, want none", ids)
	}
}

func TestEmitEventWithoutData(t *testing.T) {
	ctx := testContext(t)
	db, _ := openClock(t)
	e := event.New()
	e.SetID("e-nodata")
	e.SetSource("/prsaga/ledger")
	e.SetType(contracts.TypeTimedOut)
	if err := db.Update(ctx, func(tx store.Tx) error { return tx.Emit(&e) }); err != nil {
		t.Fatalf("emit of an event without data: %v", err)
	}
	rows, err := db.Unsent(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || len(rows[0].Body) != 0 {
		t.Fatalf("unsent: got %d rows, want one with an empty body", len(rows))
	}
}

func TestCommittedSignalsAfterEmittingCommit(t *testing.T) {
	ctx := testContext(t)
	db, _ := openClock(t)
	signalled := func() bool {
		select {
		case <-db.Committed():
			return true
		default:
			return false
		}
	}
	signalled() // whatever opening did
	if err := db.Update(ctx, func(stx store.Tx) error {
		tx := stx.(*sqlite.Tx)
		_, err := tx.Exec(`INSERT INTO kv (k, v) VALUES ('a', 1)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if signalled() {
		t.Error("Committed signalled after a commit that emitted nothing")
	}
	errNo := errors.New("no")
	_ = db.Update(ctx, func(tx store.Tx) error {
		if err := tx.Emit(requested(t, "e-rolled-back")); err != nil {
			return err
		}
		return errNo
	})
	if signalled() {
		t.Error("Committed signalled after a rolled-back transaction")
	}
	emit(t, db, requested(t, "e-1"))
	emit(t, db, requested(t, "e-2")) // coalesced: the relay reads all unsent rows
	if !signalled() {
		t.Fatal("Committed not signalled after a commit that emitted")
	}
	if signalled() {
		t.Error("Committed signalled twice for two commits; want one pending signal (non-blocking)")
	}
}

func TestOutboxStats(t *testing.T) {
	ctx := testContext(t)
	db, clk := openClock(t)
	pending, oldest, err := db.OutboxStats(ctx)
	if err != nil || pending != 0 || oldest != 0 {
		t.Errorf("empty outbox: got %d, %v, %v; want 0, 0, nil", pending, oldest, err)
	}
	emit(t, db, requested(t, "e-1"))
	clk.Advance(90 * time.Second)
	emit(t, db, requested(t, "e-2"))
	clk.Advance(10 * time.Second)
	pending, oldest, err = db.OutboxStats(ctx)
	if err != nil || pending != 2 || oldest != 100*time.Second {
		t.Errorf("two unsent: got %d, %v, %v; want 2, 1m40s, nil", pending, oldest, err)
	}
	if err := db.MarkSent(ctx, []string{"e-1"}); err != nil {
		t.Fatal(err)
	}
	pending, oldest, err = db.OutboxStats(ctx)
	if err != nil || pending != 1 || oldest != 10*time.Second {
		t.Errorf("one unsent: got %d, %v, %v; want 1, 10s, nil", pending, oldest, err)
	}
}

func TestCommittedRowsAreTheCommittedOnes(t *testing.T) {
	ctx := testContext(t)
	db, _ := openClock(t)
	if rows, complete := db.CommittedRows(); len(rows) != 0 || !complete {
		t.Fatalf("a new database hands over %d rows (complete %v), want none, complete", len(rows), complete)
	}
	errNo := errors.New("rolled back")
	errs, err := db.UpdateEach(ctx, []func(tx store.Tx) error{
		func(tx store.Tx) error { return tx.Emit(requested(t, "kept-1")) },
		func(tx store.Tx) error {
			if err := tx.Emit(requested(t, "dropped")); err != nil {
				return err
			}
			return errNo
		},
		func(tx store.Tx) error { return tx.Emit(requested(t, "kept-2"), requested(t, "kept-1")) }, // kept-1 again: not new
	})
	if err != nil || errs[0] != nil || !errors.Is(errs[1], errNo) || errs[2] != nil {
		t.Fatalf("update: %v %v", errs, err)
	}
	rows, complete := db.CommittedRows()
	var ids []string
	for _, r := range rows {
		ids = append(ids, r.ID)
	}
	if !complete || fmt.Sprint(ids) != "[kept-1 kept-2]" {
		t.Fatalf("handed over %v (complete %v), want [kept-1 kept-2], complete", ids, complete)
	}
	unsent, err := db.Unsent(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	for i, u := range unsent {
		r := rows[i]
		if u.ID != r.ID || u.Subject != r.Subject || string(u.Body) != string(r.Body) || !u.CreatedAt.Equal(r.CreatedAt) ||
			fmt.Sprint(u.Header) != fmt.Sprint(r.Header) {
			t.Errorf("row %d handed over as %+v, read back as %+v", i, r, u)
		}
	}
	if rows, _ := db.CommittedRows(); len(rows) != 0 {
		t.Errorf("handed over %d rows twice", len(rows))
	}
}

func TestCommittedRowsBeyondTheBoundAreLeftToTheTable(t *testing.T) {
	ctx := testContext(t)
	db, _ := openClock(t)
	var evs []*event.Event
	for i := 0; i < 1025; i++ {
		evs = append(evs, requested(t, fmt.Sprintf("many-%d", i)))
	}
	if err := db.Update(ctx, func(tx store.Tx) error { return tx.Emit(evs...) }); err != nil {
		t.Fatal(err)
	}
	if rows, complete := db.CommittedRows(); complete || len(rows) != 0 {
		t.Fatalf("handed over %d rows, complete %v; want none, incomplete", len(rows), complete)
	}
	if err := db.Update(ctx, func(tx store.Tx) error { return tx.Emit(requested(t, "after")) }); err != nil {
		t.Fatal(err)
	}
	if rows, complete := db.CommittedRows(); !complete || len(rows) != 1 {
		t.Fatalf("after the table was to be read: %d rows, complete %v; want 1, complete", len(rows), complete)
	}
}
