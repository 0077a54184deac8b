package sqlite

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/prsaga/prsaga/platform/store"
)

// These tests look inside the group (its queue) to know that calls are
// waiting for a transaction in progress: no timing involved.

var groupKV = Migrations{Component: "test", FS: fstest.MapFS{
	"0001_kv.sql": {Data: []byte("CREATE TABLE kv (k TEXT PRIMARY KEY, v INTEGER NOT NULL);\n")},
}}

func openGroupDB(t *testing.T) *DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "db.sqlite"), Options{}, groupKV)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// put writes k and records the transaction it ran in.
func put(k string, in *sync.Map) func(tx store.Tx) error {
	return func(stx store.Tx) error {
		tx, err := TxOf(stx)
		if err != nil {
			return err
		}
		in.Store(k, tx.d)
		tx.AfterCommit(func() { in.Store("after:"+k, true) })
		_, err = tx.ExecContext(tx.Context(), `INSERT INTO kv (k, v) VALUES (?, 1)`, k)
		return err
	}
}

func has(t *testing.T, db *DB, k string) bool {
	t.Helper()
	var n int
	if err := db.Reader().QueryRow(`SELECT count(*) FROM kv WHERE k = ?`, k).Scan(&n); err != nil {
		t.Fatalf("read %s: %v", k, err)
	}
	return n > 0
}

// holdTransaction starts an UpdateEach whose fn waits for release, and
// returns once that transaction is in progress; done is closed when the
// call returned.
func holdTransaction(t *testing.T, db *DB, in *sync.Map) (release func(), done <-chan struct{}) {
	t.Helper()
	entered, rel, fin := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(fin)
		err := db.Update(context.Background(), func(tx store.Tx) error {
			close(entered)
			<-rel
			return put("leader", in)(tx)
		})
		if err != nil {
			t.Errorf("leader: %v", err)
		}
	}()
	<-entered
	return func() { close(rel) }, fin
}

// awaitQueued waits until n calls wait for the next transaction.
func awaitQueued(t *testing.T, db *DB, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		db.group.mu.Lock()
		q := len(db.group.queue)
		db.group.mu.Unlock()
		if q == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d calls queued, want %d", q, n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestGroupCommitsQueuedCallsTogether(t *testing.T) {
	db := openGroupDB(t)
	var in sync.Map
	release, leaderDone := holdTransaction(t, db, &in)
	errNo := errors.New("f1 decided against it")
	type result struct {
		errs []error
		err  error
	}
	calls := [][]func(tx store.Tx) error{
		{put("f0", &in)},
		{func(tx store.Tx) error {
			if err := put("f1", &in)(tx); err != nil {
				return err
			}
			return errNo
		}},
		{put("f2a", &in), put("f2b", &in)},
	}
	results := make([]result, len(calls))
	var wg sync.WaitGroup
	for i, fns := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i].errs, results[i].err = db.UpdateEach(context.Background(), fns)
		}()
		awaitQueued(t, db, i+1) // in this order
	}
	release()
	<-leaderDone
	wg.Wait()
	for i, r := range results {
		if r.err != nil || len(r.errs) != len(calls[i]) {
			t.Fatalf("call %d: errs %v, err %v", i, r.errs, r.err)
		}
	}
	if results[0].errs[0] != nil || !errors.Is(results[1].errs[0], errNo) || results[2].errs[0] != nil || results[2].errs[1] != nil {
		t.Fatalf("outcomes: %v %v %v, want nil, f1's error, nil nil", results[0].errs, results[1].errs, results[2].errs)
	}
	for k, want := range map[string]bool{"leader": true, "f0": true, "f1": false, "f2a": true, "f2b": true} {
		if got := has(t, db, k); got != want {
			t.Errorf("row %s present: %v, want %v", k, got, want)
		}
	}
	for k, want := range map[string]bool{"leader": true, "f0": true, "f1": false, "f2a": true, "f2b": true} {
		if _, ran := in.Load("after:" + k); ran != want {
			t.Errorf("AfterCommit of %s ran: %v, want %v", k, ran, want)
		}
	}
	txOf := func(k string) any { v, _ := in.Load(k); return v }
	if txOf("f0") == nil || txOf("f0") != txOf("f1") || txOf("f0") != txOf("f2a") || txOf("f0") != txOf("f2b") {
		t.Error("the calls queued behind one transaction were not committed in one transaction together")
	}
	if txOf("f0") == txOf("leader") {
		t.Error("a call queued behind a transaction ran in that transaction")
	}
}

func TestGroupPanicStaysWithItsCaller(t *testing.T) {
	db := openGroupDB(t)
	var in sync.Map
	release, leaderDone := holdTransaction(t, db, &in)
	panicked := make(chan any, 1)
	go func() {
		defer func() { panicked <- recover() }()
		_, _ = db.UpdateEach(context.Background(), []func(tx store.Tx) error{
			put("p", &in),
			func(tx store.Tx) error { panic("unit bug") },
		})
	}()
	awaitQueued(t, db, 1)
	var errs []error
	var err error
	otherDone := make(chan struct{})
	go func() {
		defer close(otherDone)
		errs, err = db.UpdateEach(context.Background(), []func(tx store.Tx) error{put("o", &in)})
	}()
	awaitQueued(t, db, 2)
	release()
	<-leaderDone
	if p := <-panicked; p != "unit bug" {
		t.Errorf("the panicking caller recovered %v, want its own panic", p)
	}
	<-otherDone
	if err == nil || errs != nil {
		t.Errorf("the other caller of the panicked transaction: errs %v, err %v; want it told nothing committed", errs, err)
	}
	if has(t, db, "p") || has(t, db, "o") {
		t.Error("a unit of the panicked transaction was committed")
	}
	if err := db.Update(context.Background(), put("after", &in)); err != nil || !has(t, db, "after") {
		t.Fatalf("update after the panic: %v", err)
	}
}

func TestGroupCanceledCallerFailsAlone(t *testing.T) {
	db := openGroupDB(t)
	var in sync.Map
	release, leaderDone := holdTransaction(t, db, &in)
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	type result struct {
		errs []error
		err  error
	}
	var a, b result
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		a.errs, a.err = db.UpdateEach(canceled, []func(tx store.Tx) error{put("a", &in)})
	}()
	awaitQueued(t, db, 1)
	go func() {
		defer wg.Done()
		b.errs, b.err = db.UpdateEach(context.Background(), []func(tx store.Tx) error{put("b", &in)})
	}()
	awaitQueued(t, db, 2)
	release()
	<-leaderDone
	wg.Wait()
	if !errors.Is(a.err, context.Canceled) || a.errs != nil {
		t.Errorf("canceled caller: errs %v, err %v; want not begun, context.Canceled", a.errs, a.err)
	}
	if b.err != nil || len(b.errs) != 1 || b.errs[0] != nil {
		t.Errorf("the other caller: errs %v, err %v; want committed", b.errs, b.err)
	}
	if has(t, db, "a") || !has(t, db, "b") {
		t.Errorf("rows a, b present: %v, %v; want false, true", has(t, db, "a"), has(t, db, "b"))
	}
}
