package sqlite_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/platform/store"
)

func emitIDs(t *testing.T, db *sqlite.DB, ids ...string) {
	t.Helper()
	for _, id := range ids {
		emit(t, db, requested(t, id))
	}
}

// emitSoon opens a database, emits outbox rows ids and hands them all to
// MarkSoon.
func emitSoon(t *testing.T, ids ...string) *sqlite.DB {
	t.Helper()
	db, _ := openClock(t)
	emitIDs(t, db, ids...)
	db.MarkSoon(ids)
	return db
}

// wantNoneUnsent fails t unless every outbox row of db is marked sent.
func wantNoneUnsent(t *testing.T, db *sqlite.DB, when string) {
	t.Helper()
	if got := unsentIDs(t, db, 10); len(got) != 0 {
		t.Fatalf("%s: unsent %v, want none", when, got)
	}
}

// Rows handed to MarkSoon are marked sent by the next transaction of any
// caller; the relay's MarkSent then finds them marked and commits nothing.
func TestMarkSoonFoldsIntoTheNextCommit(t *testing.T) {
	ctx := testContext(t)
	path := filepath.Join(t.TempDir(), "db.sqlite")
	db := open(t, path, sqlite.Options{}, kv)
	emitIDs(t, db, "s-1", "s-2", "s-3")
	db.MarkSoon([]string{"s-1", "s-2"})
	if got := unsentIDs(t, db, 10); fmt.Sprint(got) != "[s-1 s-2 s-3]" {
		t.Fatalf("before any commit: unsent %v, want all three (MarkSoon itself writes nothing)", got)
	}
	putKV(t, db, "k", 1, "a handler's commit")
	if got := unsentIDs(t, db, 10); fmt.Sprint(got) != "[s-3]" {
		t.Fatalf("after the next commit: unsent %v, want [s-3]", got)
	}
	// The writer busy with another caller's transaction: a MarkSent with
	// nothing left to mark must not wait for it.
	started, release := make(chan struct{}), make(chan struct{})
	held := make(chan error, 1)
	go func() {
		held <- db.Update(ctx, func(store.Tx) error { close(started); <-release; return nil })
	}()
	<-started
	done := make(chan error, 1)
	go func() { done <- db.MarkSent(ctx, []string{"s-1", "s-2"}) }()
	var markErr error
	select {
	case markErr = <-done:
	case <-time.After(5 * time.Second):
		t.Error("MarkSent of rows a commit already marked waited for the writer")
		close(release)
		markErr = <-done
	}
	if markErr != nil {
		t.Error(markErr)
	}
	select {
	case <-release:
	default:
		close(release)
	}
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	// Asked for again (a relay retrying): marked again, harmlessly.
	if err := db.MarkSent(ctx, []string{"s-1", "s-3"}); err != nil {
		t.Fatal(err)
	}
	wantNoneUnsent(t, db, "after MarkSent")
}

// A transaction that does not commit marks nothing: the ids wait for the
// next one, and a fold never costs a caller's unit its outcome.
func TestMarkSoonWaitsForACommit(t *testing.T) {
	ctx := testContext(t)
	db := emitSoon(t, "w-1")
	errNo := errors.New("no")
	if err := db.Update(ctx, func(tx store.Tx) error { return errNo }); !errors.Is(err, errNo) {
		t.Fatalf("update: %v, want %v", err, errNo)
	}
	if got := unsentIDs(t, db, 10); fmt.Sprint(got) != "[w-1]" {
		t.Fatalf("after a rolled-back transaction: unsent %v, want [w-1]", got)
	}
	errs, err := db.UpdateEach(ctx, []func(store.Tx) error{insertKV("a", 1), func(store.Tx) error { return errNo }})
	if err != nil || errs[0] != nil || !errors.Is(errs[1], errNo) {
		t.Fatalf("update each: %v %v", errs, err)
	}
	wantNoneUnsent(t, db, "after a commit")
}

// MarkSent of rows handed to MarkSoon and not folded yet marks them
// itself.
func TestMarkSentTakesBackUnfoldedIDs(t *testing.T) {
	ctx := testContext(t)
	db := emitSoon(t, "u-1")
	if err := db.MarkSent(ctx, []string{"u-1"}); err != nil {
		t.Fatal(err)
	}
	wantNoneUnsent(t, db, "after MarkSent")
}
