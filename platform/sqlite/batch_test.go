package sqlite_test

import (
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/platform/store"
)

func TestUpdateEachKeepsEachOutcomeItsOwn(t *testing.T) {
	ctx := testContext(t)
	db, _ := openClock(t)
	errNo := errors.New("unit 1 decided against it")
	var after []string
	put := func(k string) func(tx store.Tx) error {
		return func(stx store.Tx) error {
			tx := stx.(*sqlite.Tx)
			tx.AfterCommit(func() { after = append(after, k) })
			_, err := tx.Exec(`INSERT INTO kv (k, v) VALUES (?, 1)`, k)
			return err
		}
	}
	var sawB bool
	errs, err := db.UpdateEach(ctx, []func(tx store.Tx) error{
		put("a"),
		func(tx store.Tx) error {
			if err := put("b")(tx); err != nil {
				return err
			}
			return errNo
		},
		func(stx store.Tx) error {
			tx := stx.(*sqlite.Tx)
			var n int
			if err := tx.QueryRow(`SELECT count(*) FROM kv WHERE k = 'b'`).Scan(&n); err != nil {
				return err
			}
			sawB = n > 0
			return put("c")(tx)
		},
		insertKV("a", 2), // a exists: fails alone
	})
	if err != nil {
		t.Fatalf("UpdateEach: %v", err)
	}
	if errs[0] != nil || !errors.Is(errs[1], errNo) || errs[2] != nil || errs[3] == nil {
		t.Fatalf("errs: got %v, want [nil, unit 1's error, nil, a constraint error]", errs)
	}
	if sawB {
		t.Error("unit 2 saw the write of the failed unit 1")
	}
	for k, want := range map[string]bool{"a": true, "b": false, "c": true} {
		if _, ok := get(t, db, k); ok != want {
			t.Errorf("row %s present: %v, want %v", k, ok, want)
		}
	}
	if v, _ := get(t, db, "a"); v != 1 {
		t.Errorf("a = %d, want 1 (unit 3 rolled back)", v)
	}
	if len(after) != 2 || after[0] != "a" || after[1] != "c" {
		t.Errorf("AfterCommit ran for %v, want [a c] (not for the failed unit)", after)
	}
}

// The units of a transaction run without savepoints first; a unit that
// fails sends the whole through once more with a savepoint each, so the
// others commit once, with their AfterCommit once, and the failed one not.
func TestUpdateEachFailureRunsTheOthersAgainAlone(t *testing.T) {
	ctx := testContext(t)
	db, _ := openClock(t)
	var runs [3]int
	var after []string
	unit := func(i int, k string, fail error) func(tx store.Tx) error {
		return func(stx store.Tx) error {
			runs[i]++
			tx := stx.(*sqlite.Tx)
			tx.AfterCommit(func() { after = append(after, k) })
			if _, err := tx.Exec(`INSERT INTO kv (k, v) VALUES (?, 1)`, k); err != nil {
				return err // a write left over from a run rolled back would fail here
			}
			return fail
		}
	}
	errLate := errors.New("unit 1 fails after its write")
	errs, err := db.UpdateEach(ctx, []func(tx store.Tx) error{unit(0, "x", nil), unit(1, "y", errLate), unit(2, "z", nil)})
	if err != nil {
		t.Fatalf("UpdateEach: %v", err)
	}
	if errs[0] != nil || !errors.Is(errs[1], errLate) || errs[2] != nil {
		t.Fatalf("errs: got %v, want [nil, unit 1's error, nil]", errs)
	}
	for k, want := range map[string]bool{"x": true, "y": false, "z": true} {
		if _, ok := get(t, db, k); ok != want {
			t.Errorf("row %s present: %v, want %v", k, ok, want)
		}
	}
	if len(after) != 2 || after[0] != "x" || after[1] != "z" {
		t.Errorf("AfterCommit ran for %v, want [x z]", after)
	}
	// Units before the failure ran in both runs, the one after it only in
	// the second: the first run stopped at the failure.
	if runs != [3]int{2, 2, 1} {
		t.Errorf("runs per unit: got %v, want [2 2 1]", runs)
	}

	// Units that all succeed run once.
	runs = [3]int{}
	if _, err := db.UpdateEach(ctx, []func(tx store.Tx) error{unit(0, "p", nil), unit(1, "q", nil), unit(2, "r", nil)}); err != nil {
		t.Fatalf("UpdateEach: %v", err)
	}
	if runs != [3]int{1, 1, 1} {
		t.Errorf("runs per unit: got %v, want [1 1 1]", runs)
	}
}

func TestUpdateEachPanicRollsBackAll(t *testing.T) {
	ctx := testContext(t)
	db, _ := openClock(t)
	mustPanic(t, "the panic", func() {
		_, _ = db.UpdateEach(ctx, []func(tx store.Tx) error{
			insertKV("p", 1),
			func(tx store.Tx) error { panic("unit bug") },
		})
	})
	if _, ok := get(t, db, "p"); ok {
		t.Error("a unit of the panicking batch was committed")
	}
	putKV(t, db, "q", 1, "after the panic")
}

// Statements are prepared after their first transaction and reused; the
// results are the same either way.
func TestPreparedStatementsBehaveAsPlainOnes(t *testing.T) {
	ctx := testContext(t)
	db, _ := openClock(t)
	for i := 0; i < 3; i++ {
		err := update(ctx, db, func(tx *sqlite.Tx) error {
			var v int
			err := tx.QueryRowContext(ctx, `SELECT v FROM kv WHERE k = ?`, "x").Scan(&v)
			switch {
			case i == 0 && !errors.Is(err, sql.ErrNoRows):
				t.Errorf("round %d: read of a missing row: %v, want ErrNoRows", i, err)
			case i > 0 && (err != nil || v != i):
				t.Errorf("round %d: read %d, %v; want %d", i, v, err, i)
			}
			res, err := tx.ExecContext(ctx, `INSERT INTO kv (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = excluded.v`, "x", i+1)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n != 1 {
				t.Errorf("round %d: rows affected %d, want 1", i, n)
			}
			if _, err := tx.Exec(`INSERT INTO nosuchtable VALUES (1)`); err == nil {
				t.Errorf("round %d: a statement on a missing table succeeded", i)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
	}
}

func TestUnsentExceptLeavesOutHeldRows(t *testing.T) {
	ctx := testContext(t)
	db, clk := openClock(t)
	for _, id := range []string{"e-1", "e-2", "e-3"} {
		emit(t, db, requested(t, id))
		clk.Advance(time.Second)
	}
	rows, err := db.UnsentExcept(ctx, 10, []string{"e-1", "e-3", "unknown"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].ID != "e-2" {
		t.Fatalf("unsent except e-1, e-3: got %d rows (%v), want e-2", len(rows), rows)
	}
	if rows, err := db.UnsentExcept(ctx, 2, nil); err != nil || len(rows) != 2 || rows[0].ID != "e-1" {
		t.Fatalf("unsent except nothing, limit 2: %v, %v; want e-1, e-2", rows, err)
	}
}
