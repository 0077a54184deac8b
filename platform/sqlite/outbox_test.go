package sqlite_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/prsaga/prsaga/platform/store"
)

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
