package sqlite_test

import (
	"context"
	"fmt"
	"github.com/prsaga/prsaga/platform/store"
	"testing"
	"time"

	psqlite "github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/platform/sqlite/sqlitetest"
	"github.com/prsaga/prsaga/services/validator"
	vsqlite "github.com/prsaga/prsaga/services/validator/sqlite"
)

const sha = "1111111111111111111111111111111111111111"

func TestStatusesLatestWins(t *testing.T) {
	ctx := context.Background()
	db := sqlitetest.Open(t, vsqlite.Migrations)
	clock := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	st := vsqlite.NewStore(db, func() time.Time { clock = clock.Add(time.Second); return clock })

	for _, s := range []validator.Status{
		{Context: "ci", State: "pending", Description: "queued"},
		{Context: "lint", State: "success"},
		{Context: "ci", State: "failure", Description: "red"},
	} {
		if _, err := st.SetStatus(ctx, "acme/widgets", sha, s); err != nil {
			t.Fatal(err)
		}
	}
	// Another repo's and another sha's statuses are separate.
	if _, err := st.SetStatus(ctx, "acme/gadgets", sha, validator.Status{Context: "ci", State: "success"}); err != nil {
		t.Fatal(err)
	}
	got, err := st.Statuses(ctx, "acme/widgets", sha)
	if err != nil {
		t.Fatal(err)
	}
	want := "[{ci failure red 2030-01-02 03:04:08 +0000 UTC} {lint success  2030-01-02 03:04:07 +0000 UTC}]"
	if fmt.Sprint(got) != want {
		t.Errorf("statuses = %v\nwant       %s", got, want)
	}
	none, err := st.Statuses(ctx, "acme/widgets", "2222222222222222222222222222222222222222")
	if err != nil || none == nil || len(none) != 0 {
		t.Errorf("statuses of an unknown sha = %#v, %v; want an empty non-nil list", none, err)
	}
}

func TestProtection(t *testing.T) {
	ctx := context.Background()
	db := sqlitetest.Open(t, vsqlite.Migrations)
	st := vsqlite.NewStore(db, nil)
	if got, ok, err := st.Protection(ctx, "acme/widgets", "main"); err != nil || ok || got != nil {
		t.Errorf("unconfigured protection = %v, %v, %v; want nil, false, nil", got, ok, err)
	}
	for _, want := range [][]string{{"ci", "lint"}, {}} {
		if err := st.SetProtection(ctx, "acme/widgets", "release/1.x", want); err != nil {
			t.Fatal(err)
		}
		got, ok, err := st.Protection(ctx, "acme/widgets", "release/1.x")
		if err != nil || !ok || fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", want) {
			t.Errorf("protection = %#v, %v, %v; want %#v, true, nil", got, ok, err, want)
		}
	}
}

func TestLockRoundTrip(t *testing.T) {
	ctx := context.Background()
	db := sqlitetest.Open(t, vsqlite.Migrations)
	st := vsqlite.NewStore(db, nil)
	if l, err := st.Lock(ctx, "acme/widgets#1"); err != nil || l != (validator.Lock{}) {
		t.Errorf("lock of an unseen PR = %+v, %v; want the zero lock", l, err)
	}
	var prev validator.Lock
	for _, want := range []validator.Lock{
		{Holder: "run-1", Attempt: 1},
		{Holder: "run-1", Attempt: 2, Merged: true},
		{Merged: true},
	} {
		err := db.Update(ctx, func(stx store.Tx) error {
			tx := stx.(*psqlite.Tx)
			before, err := vsqlite.Lock(tx.Context(), tx, "acme/widgets#1")
			if err != nil {
				return err
			}
			if before != prev {
				return fmt.Errorf("lock read in the transaction = %+v, want %+v", before, prev)
			}
			return vsqlite.PutLock(tx, "acme/widgets#1", want)
		})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := st.Lock(ctx, "acme/widgets#1"); err != nil || got != want {
			t.Errorf("lock = %+v, %v; want %+v", got, err, want)
		}
		prev = want
	}
}
