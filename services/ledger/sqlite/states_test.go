package sqlite_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/prsaga/prsaga/contracts"
	psqlite "github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/platform/sqlite/sqlitetest"
	"github.com/prsaga/prsaga/platform/store"
	ledgersqlite "github.com/prsaga/prsaga/services/ledger/sqlite"
	"github.com/prsaga/prsaga/services/ledger/storetest"
)

// StateCounts reads the counts from saga_state_count and seeks pr_saga
// (the oldest of each state) once per state, never scanning it. What it
// counts is the conformance suite's (Stats).
func TestStateCountsSeeksTheStateIndex(t *testing.T) {
	db := seeded(t)
	if p := strings.Join(queryPlan(t, db, ledgersqlite.StateCountsQuery), "; "); !strings.Contains(p, "SEARCH pr_saga USING COVERING INDEX idx_saga_state (state=?)") ||
		strings.Contains(p, "SCAN pr_saga") {
		t.Errorf("plan %q, want one seek of idx_saga_state per state", p)
	}
}

// The triggers keep saga_state_count equal to a count of pr_saga through
// inserts, state changes, other updates, deletes and a rolled-back write.
func TestStateCountsFollowEveryWrite(t *testing.T) {
	db := sqlitetest.Open(t, ledgersqlite.Migrations)
	s := ledgersqlite.NewStore(db)
	storetest.Seed(t, s)
	check := func(when string) {
		t.Helper()
		got, err := s.StateCounts(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		rows, err := db.Reader().Query(`SELECT state, count(*) FROM pr_saga GROUP BY state`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		want := map[contracts.State]int{}
		for rows.Next() {
			var st string
			var n int
			if err := rows.Scan(&st, &n); err != nil {
				t.Fatal(err)
			}
			want[contracts.State(st)] = n
		}
		for st := range got {
			if _, ok := want[st]; !ok {
				t.Errorf("%s: counted %+v, but pr_saga has none", when, got[st])
			}
		}
		for st, n := range want {
			if got[st].Sagas != n {
				t.Errorf("%s: %s counted %d, pr_saga has %d", when, st, got[st].Sagas, n)
			}
		}
	}
	check("seeded")
	exec := func(q string) {
		t.Helper()
		err := db.Update(context.Background(), func(tx store.Tx) error {
			_, err := tx.(*psqlite.Tx).ExecContext(context.Background(), q)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	exec(`UPDATE pr_saga SET state = 'MERGING' WHERE state = 'VALIDATING' AND pr_id LIKE '%1'`)
	check("after moving some VALIDATING sagas")
	exec(`UPDATE pr_saga SET last_error = 'x', state = state`)
	check("after an update that keeps the state")
	exec(`DELETE FROM pr_saga WHERE state = 'VALIDATING'`)
	check("after a delete")
	err := db.Update(context.Background(), func(tx store.Tx) error {
		if _, err := tx.(*psqlite.Tx).ExecContext(context.Background(), `UPDATE pr_saga SET state = 'INDEXING'`); err != nil {
			return err
		}
		return errors.New("roll back")
	})
	if err == nil {
		t.Fatal("the failing transaction committed")
	}
	check("after a rolled-back update")
}

// The count triggers only update rows (migration 0006): every state of the
// contract has its row from the start, or its sagas would go uncounted.
// And they hold no upsert: its DO UPDATE resolves a conflict by ABORT
// whatever the writing statement says, which brings back the statement
// journal that SaveSaga's OR FAIL avoids (a copy of every page a saga's
// first write touches).
func TestStateCountTriggersUpdateSeededRows(t *testing.T) {
	db := sqlitetest.Open(t, ledgersqlite.Migrations)
	have := map[string]bool{}
	rows, err := db.Reader().Query(`SELECT state FROM saga_state_count`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var st string
		if err := rows.Scan(&st); err != nil {
			t.Fatal(err)
		}
		have[st] = true
	}
	rows.Close()
	for _, st := range contracts.States {
		if !have[string(st)] {
			t.Errorf("no saga_state_count row for %s in a new database", st)
		}
	}
	rows, err = db.Reader().Query(`SELECT name, sql FROM sqlite_schema WHERE type = 'trigger' AND tbl_name = 'pr_saga'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var name, sql string
		if err := rows.Scan(&name, &sql); err != nil {
			t.Fatal(err)
		}
		n++
		if strings.Contains(strings.ToUpper(sql), "ON CONFLICT") {
			t.Errorf("trigger %s holds an upsert: %s", name, sql)
		}
	}
	if n != 3 {
		t.Errorf("%d triggers on pr_saga, want 3 (insert, update of state, delete)", n)
	}
}
