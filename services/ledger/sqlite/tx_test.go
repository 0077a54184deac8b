package sqlite_test

import (
	"context"
	"slices"
	"testing"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/services/ledger"
	"github.com/prsaga/prsaga/services/ledger/storetest"
)

// Transitions are numbered after the PR's last one whether the number was
// read with the row (Saga) or looked up by AddTransitions, and however
// many are added in one transaction.
func TestTransitionsNumberedAfterTheLastOne(t *testing.T) {
	s := newStore(t)
	const pr = "acme/seq#1"
	tr := func(to contracts.State) ledger.Transition {
		return ledger.Transition{CorrelationID: "run-1", To: to, At: t0}
	}
	var got []int64
	add := func(tx ledger.Tx, to ...contracts.State) error {
		var ts []ledger.Transition
		for _, st := range to {
			ts = append(ts, tr(st))
		}
		out, err := tx.AddTransitions(pr, ts)
		for _, o := range out {
			got = append(got, o.Seq)
		}
		return err
	}
	err := s.Update(context.Background(), func(tx ledger.Tx) error {
		return add(tx, contracts.StateValidating) // no row read: looked up
	})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Update(context.Background(), func(tx ledger.Tx) error {
		if err := tx.SaveSaga(contracts.Row{}, storetest.Row(pr, contracts.StateMerging, t0)); err != nil {
			return err
		}
		if _, err := tx.Saga(pr); err != nil { // read with the row
			return err
		}
		if err := add(tx, contracts.StateMerging, contracts.StateNotifying); err != nil {
			return err
		}
		return add(tx, contracts.StateIndexing)
	})
	if err != nil {
		t.Fatal(err)
	}
	saga, err := s.Get(context.Background(), pr)
	if err != nil {
		t.Fatal(err)
	}
	var stored []int64
	for _, tr := range saga.Transitions {
		stored = append(stored, tr.Seq)
	}
	if want := []int64{1, 2, 3, 4}; !slices.Equal(got, want) || !slices.Equal(stored, want) {
		t.Fatalf("numbered %v, stored %v; want %v", got, stored, want)
	}
}
