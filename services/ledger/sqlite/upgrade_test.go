package sqlite_test

import (
	"context"
	"testing"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/sqlite/sqlitetest"
	"github.com/prsaga/prsaga/services/ledger"
	lsqlite "github.com/prsaga/prsaga/services/ledger/sqlite"
)

// The ledger's database written by each earlier schema version opens and
// migrates today: a saga in each state reads back with its transitions and
// its events, the per-state counts (a later migration's) count the sagas
// the old version wrote and follow a new transition, and a stored retry
// answer is still the answer (testdata/schema, made by go run
// ./platform/sqlite/schemafixtures).
func TestUpgradeFromEarlierVersions(t *testing.T) {
	sagas := []struct {
		state       contracts.State
		transitions []contracts.State
	}{
		{contracts.StateValidating, []contracts.State{contracts.StateValidating}},
		{contracts.StateMerging, []contracts.State{contracts.StateValidating, contracts.StateMerging}},
		{contracts.StateNotifying, []contracts.State{contracts.StateValidating, contracts.StateMerging, contracts.StateNotifying}},
		{contracts.StateIndexing, []contracts.State{contracts.StateValidating, contracts.StateMerging, contracts.StateNotifying, contracts.StateIndexing}},
		{contracts.StateMerged, []contracts.State{contracts.StateValidating, contracts.StateMerging, contracts.StateNotifying, contracts.StateIndexing, contracts.StateMerged}},
		{contracts.StateMergeFailed, []contracts.State{contracts.StateValidating, contracts.StateMerging, contracts.StateMergeFailed}},
	}
	sqlitetest.EachFixture(t, func(t *testing.T, ctx context.Context, fixture string) {
		hadAnswers := sqlitetest.HadMigration(t, fixture, "ledger", "0002_retry_answers.sql")
		db := sqlitetest.Upgrade(t, fixture, sqlitetest.FixtureTime.Add(time.Hour), lsqlite.Migrations)
		st := lsqlite.NewStore(db)
		for i, s := range sagas {
			pr := "acme/widgets#" + string(rune('1'+i))
			row, err := st.SagaRow(ctx, pr)
			if err != nil {
				t.Fatalf("saga %s after the upgrade: %v", pr, err)
			}
			if row.State != s.state || row.Version != int64(len(s.transitions)) || row.Merged != (s.state == contracts.StateMerged) {
				t.Errorf("saga %s after the upgrade: %+v; want state %s, version %d", pr, row, s.state, len(s.transitions))
			}
			if s.state == contracts.StateMergeFailed && (row.FailedStep != contracts.StateMerging || row.LastError == "") {
				t.Errorf("failed saga %s after the upgrade: failed step %q, error %q", pr, row.FailedStep, row.LastError)
			}
			ts, err := st.Transitions(ctx, pr)
			if err != nil || len(ts) != len(s.transitions) {
				t.Fatalf("transitions of %s after the upgrade: %+v, %v; want %d", pr, ts, err, len(s.transitions))
			}
			for j, tr := range ts {
				if tr.Seq != int64(j+1) || tr.To != s.transitions[j] || tr.CorrelationID != row.CorrelationID {
					t.Errorf("transition %d of %s after the upgrade: %+v; want seq %d to %s", j, pr, tr, j+1, s.transitions[j])
				}
			}
			evs, err := st.Events(ctx, pr)
			if err != nil || len(evs) != 1 || evs[0].Type != contracts.TypeMergeRequested || len(evs[0].Event) == 0 {
				t.Errorf("events of %s after the upgrade: %+v, %v; want its requested event", pr, evs, err)
			}
		}
		counts, err := st.StateCounts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range contracts.States {
			if counts[s].Sagas != 1 {
				t.Errorf("sagas in %s after the upgrade: %d, want 1", s, counts[s].Sagas)
			}
		}

		// Usable: a saga the old version wrote moves on, and the counts follow.
		err = st.Update(ctx, func(tx ledger.Tx) error {
			prev, err := tx.Saga("acme/widgets#1")
			if err != nil {
				return err
			}
			next := prev
			next.State, next.Version, next.UpdatedAt = contracts.StateMerging, prev.Version+1, sqlitetest.FixtureTime.Add(time.Hour)
			if err := tx.SaveSaga(prev, next); err != nil {
				return err
			}
			_, err = tx.AddTransitions(prev.PRID, []ledger.Transition{{CorrelationID: prev.CorrelationID, From: prev.State, To: next.State, Reason: "validated", At: next.UpdatedAt}})
			if err != nil {
				return err
			}
			a, found, err := tx.RetryAnswer("retry-key-1")
			if err != nil {
				return err
			}
			if found != hadAnswers || (found && (a.PRID != "acme/widgets#6" || a.Accepted || a.Refused == "")) {
				t.Errorf("retry answer after the upgrade: %+v, found %v; want the stored refusal: %v", a, found, hadAnswers)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("moving a saga after the upgrade: %v", err)
		}
		counts, err = st.StateCounts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if counts[contracts.StateValidating].Sagas != 0 || counts[contracts.StateMerging].Sagas != 2 {
			t.Errorf("counts after a transition: VALIDATING %d, MERGING %d; want 0, 2", counts[contracts.StateValidating].Sagas, counts[contracts.StateMerging].Sagas)
		}
		if ts, err := st.Transitions(ctx, "acme/widgets#1"); err != nil || len(ts) != 2 || ts[1].Seq != 2 {
			t.Errorf("transitions after the new one: %+v, %v; want seq 2 after the old", ts, err)
		}
	})
}
