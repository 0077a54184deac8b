package ydb

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/prsaga/prsaga/platform/store"
)

// runEach leaves out a unit that fails on its own and commits the others
// in the next transaction; a failure of the transaction fails the batch.
func TestRunEachLeavesOutFailedUnits(t *testing.T) {
	var committed [][]int
	update := func(fn func(tx store.Tx) error) error {
		var ran []int
		err := fn(fakeTxFor(&ran))
		if err == nil {
			committed = append(committed, ran)
		}
		return err
	}
	bad := errors.New("unit 1 refused")
	dup := errors.New("unit 3 is a duplicate")
	unit := func(i int, err error) func(tx store.Tx) error {
		return func(tx store.Tx) error {
			*tx.(recTx).ran = append(*tx.(recTx).ran, i)
			return err
		}
	}
	errs, err := runEach(update, []func(tx store.Tx) error{unit(0, nil), unit(1, bad), unit(2, nil), unit(3, dup)})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(errs[1], bad) || !errors.Is(errs[3], dup) || errs[0] != nil || errs[2] != nil {
		t.Fatalf("errs = %v, want units 1 and 3 failed alone", errs)
	}
	if len(committed) != 1 || !slices.Equal(committed[0], []int{0, 2}) {
		t.Fatalf("committed %v, want one transaction of units 0 and 2", committed)
	}

	all := []func(tx store.Tx) error{unit(0, bad), unit(1, bad)}
	if errs, err := runEach(update, all); err != nil || !errors.Is(errs[0], bad) || !errors.Is(errs[1], bad) {
		t.Fatalf("every unit failing: %v, %v", errs, err)
	}

	ctxErr := func(tx store.Tx) error { return tx.Context().Err() }
	cancelled := func(fn func(tx store.Tx) error) error { return fn(cancelledTx{}) }
	if _, err := runEach(cancelled, []func(tx store.Tx) error{ctxErr}); err == nil {
		t.Fatal("a cancelled context was taken for a unit's own failure")
	}
}

type recTx struct {
	store.Tx
	ran *[]int
}

func fakeTxFor(ran *[]int) store.Tx { return recTx{ran: ran} }

type cancelledTx struct{ store.Tx }

func (cancelledTx) Context() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}
