package sqlite_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/services/ledger"
	ledgersqlite "github.com/prsaga/prsaga/services/ledger/sqlite"
	"github.com/prsaga/prsaga/services/ledger/storetest"
)

// EventAndSaga answers what EventRecorded and Saga answer, in every case
// the projection meets: no row, a row, a recorded event.
func TestEventAndSagaAgreesWithTheSeparateReads(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	const pr = "acme/first#1"
	check := func(label, eventID, prID string) {
		t.Helper()
		err := s.Update(ctx, func(tx ledger.Tx) error {
			recorded, row, err := tx.(ledger.FirstReader).EventAndSaga(eventID, prID)
			if err != nil {
				return err
			}
			wantRecorded, err := tx.EventRecorded(eventID)
			if err != nil {
				return err
			}
			wantRow, err := tx.Saga(prID)
			if err != nil {
				return err
			}
			if recorded != wantRecorded || row != wantRow {
				return fmt.Errorf("EventAndSaga = %v, %+v; want %v, %+v", recorded, row, wantRecorded, wantRow)
			}
			return nil
		})
		if err != nil {
			t.Errorf("%s: %v", label, err)
		}
	}
	check("empty", "e1", pr)
	row := storetest.Row(pr, contracts.StateMerging, t0)
	row.FailedStep, row.LastError, row.TimedOut, row.MergeSHA, row.Merged, row.Attempts =
		contracts.StateMerging, "boom", true, strings.Repeat("a", 40), true, 3
	err := s.Update(ctx, func(tx ledger.Tx) error {
		if err := tx.SaveSaga(contracts.Row{}, row); err != nil {
			return err
		}
		return tx.RecordEvent(ledger.Event{EventID: "e1", PRID: pr, CorrelationID: row.CorrelationID,
			Type: contracts.TypeMergeRequested, Status: ledger.StatusApplied, ReceivedAt: t0, Event: []byte(`{}`)})
	})
	if err != nil {
		t.Fatal(err)
	}
	check("row, event recorded", "e1", pr)
	check("row, event not recorded", "e2", pr)
	check("other PR, event recorded", "e1", "acme/first#2")
}

// A PR without a row may still have a history (transitions added without
// a row, as TestTransitionsNumberedAfterTheLastOne does): the number read
// by EventAndSaga when there is no row numbers the next transition after
// it, not from 1.
func TestEventAndSagaKeepsTheLastSeqWithoutARow(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	const pr = "acme/first#3"
	add := func(tx ledger.Tx) (int64, error) {
		out, err := tx.AddTransitions(pr, []ledger.Transition{{CorrelationID: "run-1", To: contracts.StateValidating, At: t0}})
		if err != nil {
			return 0, err
		}
		return out[0].Seq, nil
	}
	var got []int64
	for range 2 {
		err := s.Update(ctx, func(tx ledger.Tx) error {
			if _, _, err := tx.(ledger.FirstReader).EventAndSaga("e1", pr); err != nil {
				return err
			}
			seq, err := add(tx)
			got = append(got, seq)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if want := []int64{1, 2}; !slices.Equal(got, want) {
		t.Fatalf("numbered %v, want %v", got, want)
	}
}

// The projection's first read seeks three primary keys and scans nothing.
func TestEventAndSagaPlan(t *testing.T) {
	db := seeded(t)
	p := strings.Join(queryPlan(t, db, ledgersqlite.EventAndSagaQuery, "e1", "a/b#1", "a/b#1"), "; ")
	for _, want := range []string{
		"SEARCH saga_event USING COVERING INDEX sqlite_autoindex_saga_event_1 (event_id=?)",
		"SEARCH saga_transition USING PRIMARY KEY (pr_id=?)",
		"SEARCH s USING PRIMARY KEY (pr_id=?)",
	} {
		if !strings.Contains(p, want) {
			t.Errorf("plan: %s\nwant %s", p, want)
		}
	}
	if strings.Contains(p, "SCAN saga_event") || strings.Contains(p, "SCAN saga_transition") || strings.Contains(p, "SCAN s ") {
		t.Errorf("plan scans a table: %s", p)
	}
}
