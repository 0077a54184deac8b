package sqlite_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/sqlite/sqlitetest"
	"github.com/prsaga/prsaga/services/ledger"
	ledgersqlite "github.com/prsaga/prsaga/services/ledger/sqlite"
)

// Step durations run from the transition into a step to the next one; a
// visit entered by an inferred transition, or not finished, is left out.
func TestStatsStepDurations(t *testing.T) {
	s := ledgersqlite.NewStore(sqlitetest.Open(t, ledgersqlite.Migrations))
	add := func(pr string, ts ...ledger.Transition) {
		err := s.Update(context.Background(), func(tx ledger.Tx) error {
			_, err := tx.AddTransitions(pr, ts)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	tr := func(to contracts.State, ms int, inferred bool) ledger.Transition {
		return ledger.Transition{CorrelationID: "run-1", To: to, At: at(ms), Inferred: inferred}
	}
	for i := range 100 {
		pr := contracts.PRID("acme/s", i+1)
		// VALIDATING lasts i+1 ms; MERGING 1s; NOTIFYING inferred; INDEXING unfinished.
		add(pr, tr(contracts.StateValidating, 0, false), tr(contracts.StateMerging, i+1, false),
			tr(contracts.StateNotifying, i+1001, true), tr(contracts.StateIndexing, i+1001, false))
	}
	st, err := s.Stats(context.Background(), ledger.StepWindow{Since: t0, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	want := map[contracts.State]ledger.StepStats{
		contracts.StateValidating: {Count: 100, P50Ms: 50, P99Ms: 99},
		contracts.StateMerging:    {Count: 100, P50Ms: 1000, P99Ms: 1000},
		contracts.StateNotifying:  {},
		contracts.StateIndexing:   {},
	}
	for k, v := range want {
		if st.Steps[k] != v {
			t.Errorf("%s: %+v, want %+v", k, st.Steps[k], v)
		}
	}
}

func TestRunListsTransitionsAndEventsOfOneCorrelationID(t *testing.T) {
	s := ledgersqlite.NewStore(sqlitetest.Open(t, ledgersqlite.Migrations))
	if _, err := s.Run(context.Background(), "nope"); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("unknown run: %v, want ErrNotFound", err)
	}
	err := s.Update(context.Background(), func(tx ledger.Tx) error {
		if _, err := tx.AddTransitions("acme/r#1", []ledger.Transition{{CorrelationID: "run-1", To: contracts.StateValidating, At: t0},
			{CorrelationID: "run-2", From: contracts.StateMergeFailed, To: contracts.StateValidating, At: t0.Add(time.Second)}}); err != nil {
			return err
		}
		return tx.RecordEvent(ledger.Event{EventID: "e1", PRID: "acme/r#1", CorrelationID: "run-1", Type: contracts.TypeMergeRequested,
			Status: ledger.StatusApplied, ReceivedAt: t0, Event: []byte(`{}`)})
	})
	if err != nil {
		t.Fatal(err)
	}
	run, err := s.Run(context.Background(), "run-1")
	if err != nil || run.PRID != "acme/r#1" || len(run.Transitions) != 1 || len(run.Events) != 1 || run.Events[0].EventID != "e1" {
		t.Fatalf("run-1: %+v, %v", run, err)
	}
}

// The step durations' window is one backwards range of idx_transition_at,
// which covers it: neither saga_transition itself nor a sort, whatever
// the size of the history.
func TestStepWindowReadsOneIndexRange(t *testing.T) {
	db := sqlitetest.Open(t, ledgersqlite.Migrations)
	rows, err := db.Reader().Query("EXPLAIN QUERY PLAN "+ledgersqlite.RecentTransitionsQuery, t0.UnixMicro(), 10_000)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan strings.Builder
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		plan.WriteString(detail + "; ")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	p := plan.String()
	if !strings.Contains(p, "SEARCH saga_transition USING COVERING INDEX idx_transition_at (at>?)") || strings.Contains(p, "TEMP B-TREE") {
		t.Errorf("plan %q, want one range of the covering index idx_transition_at and no sort", p)
	}
}
