// Package storetest is the validator's part of the store conformance
// suite (platform/store/storetest): statuses, branch protection and the
// per-PR lock, run against every adapter.
package storetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	pstoretest "github.com/prsaga/prsaga/platform/store/storetest"
	"github.com/prsaga/prsaga/services/validator"
	"github.com/prsaga/prsaga/services/validator/server"
)

// Adapter is the validator's tables on one store.
type Adapter = pstoretest.Tables[validator.Store]

// Suite is the validator's part of the store conformance suite.
var Suite = pstoretest.Suite[validator.Store]{SQLite: server.Module.SQLite, YDB: server.Module.YDB, Adapter: server.Adapter, Run: Run}

// tables opens a fresh database with open and returns its adapter and the
// validator over its tables (what writes them outside the runner's commits);
// now stamps statuses and transactions.
func tables(t *testing.T, open Opener, now func() time.Time) (Adapter, *validator.Validator) {
	a := open(t, now)
	return a, &validator.Validator{DB: a.DB, Store: a.Store, Now: now}
}

// Opener opens a fresh database of one store with the validator's schema
// and returns its adapter; now is the clock of statuses and transactions.
type Opener = pstoretest.TablesOpener[validator.Store]

const sha = "1111111111111111111111111111111111111111"

// Run runs the validator's suite on the tables open gives (see Suite).
func Run(t *testing.T, open Opener) {
	t.Run("StatusesLatestWins", func(t *testing.T) { testStatuses(t, open) })
	t.Run("Protection", func(t *testing.T) { testProtection(t, open) })
	t.Run("LockRoundTrip", func(t *testing.T) { testLockRoundTrip(t, open) })
	t.Run("LockOneWinner", func(t *testing.T) { testLockOneWinner(t, open) })
	t.Run("BindOtherTx", func(t *testing.T) {
		pstoretest.BindOtherTx(t, open(t, pstoretest.NewClock(pstoretest.T0).Now).Store.Bind)
	})
}

func testStatuses(t *testing.T, open Opener) {
	ctx := pstoretest.Context(t)
	clk := pstoretest.NewClock(pstoretest.T0)
	a, v := tables(t, open, func() time.Time { clk.Advance(time.Second); return clk.Now() })
	stored := map[string]validator.Status{}
	for _, s := range []validator.Status{
		{Context: "ci", State: "pending", Description: "queued"},
		{Context: "lint", State: "success"},
		{Context: "ci", State: "failure", Description: "red"},
	} {
		st, err := v.SetStatus(ctx, "acme/widgets", sha, s)
		if err != nil {
			t.Fatal(err)
		}
		stored[s.Context] = st
	}
	if _, err := v.SetStatus(ctx, "acme/gadgets", sha, validator.Status{Context: "ci", State: "success"}); err != nil {
		t.Fatal(err)
	}
	if !stored["ci"].UpdatedAt.After(stored["lint"].UpdatedAt) {
		t.Fatalf("SetStatus stamps: ci %v, lint %v; want ci later", stored["ci"].UpdatedAt, stored["lint"].UpdatedAt)
	}
	want := fmt.Sprint([]validator.Status{stored["ci"], stored["lint"]})
	got, err := a.Store.Statuses(ctx, "acme/widgets", sha)
	if err != nil || fmt.Sprint(got) != want {
		t.Errorf("statuses = %v, %v\nwant %s", got, err, want)
	}
	var inTx []validator.Status
	if err := v.Update(ctx, func(tx validator.Tx) error {
		var err error
		inTx, err = tx.Statuses("acme/widgets", sha)
		return err
	}); err != nil || fmt.Sprint(inTx) != want {
		t.Errorf("statuses read in a transaction = %v, %v\nwant %s", inTx, err, want)
	}
	none, err := a.Store.Statuses(ctx, "acme/widgets", "2222222222222222222222222222222222222222")
	if err != nil || none == nil || len(none) != 0 {
		t.Errorf("statuses of an unknown sha = %#v, %v; want an empty non-nil list", none, err)
	}
}

func testProtection(t *testing.T, open Opener) {
	ctx := pstoretest.Context(t)
	a, v := tables(t, open, pstoretest.NewClock(pstoretest.T0).Now)
	if got, ok, err := a.Store.Protection(ctx, "acme/widgets", "main"); err != nil || ok || got != nil {
		t.Errorf("unconfigured protection = %v, %v, %v; want nil, false, nil", got, ok, err)
	}
	for _, want := range [][]string{{"ci", "lint"}, {}} {
		if err := v.SetProtection(ctx, "acme/widgets", "release/1.x", want); err != nil {
			t.Fatal(err)
		}
		got, ok, err := a.Store.Protection(ctx, "acme/widgets", "release/1.x")
		if err != nil || !ok || fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", want) {
			t.Errorf("protection = %#v, %v, %v; want %#v, true, nil", got, ok, err, want)
		}
		var inTx []string
		if err := v.Update(ctx, func(tx validator.Tx) error {
			var err error
			inTx, ok, err = tx.Protection("acme/widgets", "release/1.x")
			return err
		}); err != nil || !ok || !slices.Equal(inTx, want) {
			t.Errorf("protection read in a transaction = %v, %v, %v; want %v", inTx, ok, err, want)
		}
	}
	if got, ok, err := a.Store.Protection(ctx, "acme/widgets", "main"); err != nil || ok || got != nil {
		t.Errorf("another branch's protection = %v, %v, %v; want nil, false, nil", got, ok, err)
	}
}

func testLockRoundTrip(t *testing.T, open Opener) {
	ctx := pstoretest.Context(t)
	a, v := tables(t, open, pstoretest.NewClock(pstoretest.T0).Now)
	const pr = "acme/widgets#1"
	if l, err := a.Store.Lock(ctx, pr); err != nil || l != (validator.Lock{}) {
		t.Errorf("lock of an unseen PR = %+v, %v; want the zero lock", l, err)
	}
	var prev validator.Lock
	for _, want := range []validator.Lock{
		{Holder: "run-1", Attempt: 1},
		{Holder: "run-1", Attempt: 2, Merged: true},
		{Merged: true},
	} {
		err := v.Update(ctx, func(tx validator.Tx) error {
			before, err := tx.Lock(pr)
			if err != nil {
				return err
			}
			if before != prev {
				return fmt.Errorf("lock read in the transaction = %+v, want %+v", before, prev)
			}
			return tx.PutLock(pr, want)
		})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := a.Store.Lock(ctx, pr); err != nil || got != want {
			t.Errorf("lock = %+v, %v; want %+v", got, err, want)
		}
		prev = want
	}
}

// testLockOneWinner: runs of one PR race to take its free lock, each
// reading and writing it in one transaction; exactly one takes it.
func testLockOneWinner(t *testing.T, open Opener) {
	ctx := pstoretest.Context(t)
	a, v := tables(t, open, pstoretest.NewClock(pstoretest.T0).Now)
	const pr = "acme/widgets#7"
	const runs = 6
	var mu sync.Mutex
	var took []string
	var wg sync.WaitGroup
	for i := 0; i < runs; i++ {
		run := fmt.Sprintf("run-%d", i)
		wg.Go(func() {
			var taken bool
			err := v.Update(ctx, func(tx validator.Tx) error {
				taken = false
				l, err := tx.Lock(pr)
				if err != nil || l.Held() {
					return err
				}
				next, _ := l.Take(run, 1)
				taken = true
				return tx.PutLock(pr, next)
			})
			if err != nil {
				t.Errorf("%s: %v", run, err)
				return
			}
			if taken {
				mu.Lock()
				took = append(took, run)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(took) != 1 {
		t.Fatalf("runs that took the lock: %v, want exactly one", took)
	}
	if l, err := a.Store.Lock(ctx, pr); err != nil || l.Holder != took[0] {
		t.Errorf("lock = %+v, %v; want held by %s", l, err, took[0])
	}
}
