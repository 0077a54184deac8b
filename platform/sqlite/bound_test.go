package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"

	"github.com/prsaga/prsaga/platform/store"
)

// The units of one transaction share its bound statements: a cached
// statement is bound once per transaction, whichever unit runs it, also
// after a unit failed and was rolled back to its savepoint (the units run
// twice then, in two transactions: without savepoints, then with); and
// every unit's writes land as before.
func TestUnitsOfATransactionShareBoundStatements(t *testing.T) {
	db := openGroupDB(t)
	ctx := context.Background()
	const insert = `INSERT INTO kv (k, v) VALUES (?, 1)`
	// The first transaction runs the statement unprepared and prepares it
	// once over.
	if err := db.Update(ctx, func(stx store.Tx) error {
		_, err := stx.(*Tx).ExecContext(ctx, insert, "warm")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if db.stmts.get(insert) == nil {
		t.Fatal("test setup: the insert was not cached")
	}
	var runs []*bound // each run's shared cache
	boundInsert := map[*bound]map[*sql.Stmt]bool{}
	fns := make([]func(store.Tx) error, 4)
	for i := range fns {
		fns[i] = func(stx store.Tx) error {
			tx := stx.(*Tx)
			if i == 0 {
				runs = append(runs, tx.bound)
				boundInsert[tx.bound] = map[*sql.Stmt]bool{}
			} else if tx.bound != runs[len(runs)-1] {
				t.Errorf("unit %d has a bound cache of its own", i)
			}
			if _, err := tx.ExecContext(ctx, insert, fmt.Sprint("k", i)); err != nil {
				return err
			}
			boundInsert[tx.bound][tx.stmt(ctx, db.stmts.get(insert))] = true
			if i == 1 {
				return errors.New("unit 1 fails") // rolled back to its savepoint
			}
			return nil
		}
	}
	errs, err := db.UpdateEach(ctx, fns)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range errs {
		if (e != nil) != (i == 1) {
			t.Errorf("unit %d: %v", i, e)
		}
	}
	for r, b := range runs {
		if len(boundInsert[b]) != 1 {
			t.Errorf("run %d bound the insert %d times in one transaction, want once", r, len(boundInsert[b]))
		}
	}
	shared := runs[len(runs)-1]
	for i := 0; i < 4; i++ {
		if got := has(t, db, fmt.Sprint("k", i)); got != (i != 1) {
			t.Errorf("k%d committed: %v", i, got)
		}
	}
	// A later transaction binds anew (the earlier ones were closed with it).
	var again *sql.Stmt
	if err := db.Update(ctx, func(stx store.Tx) error {
		tx := stx.(*Tx)
		if tx.bound == shared {
			t.Error("a later transaction shares the earlier one's bound statements")
		}
		_, err := tx.ExecContext(ctx, insert, "later")
		again = tx.stmt(ctx, db.stmts.get(insert))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for _, b := range runs {
		if boundInsert[b][again] {
			t.Error("a later transaction reused a statement bound to an earlier one")
		}
	}
}

// A query of many rows in a transaction runs its cached statement, and
// while its rows are open the same query — a nested loop over it, or the
// same SQL as one row — runs unprepared instead of resetting the rows under
// their reader: every loop reads every row.
func TestQueryRowsHoldTheirStatementUntilClosed(t *testing.T) {
	db := openGroupDB(t)
	ctx := context.Background()
	const all = `SELECT k FROM kv WHERE v >= ? ORDER BY k`
	keys := []string{"a", "b", "c"}
	if err := db.Update(ctx, func(stx store.Tx) error {
		tx := stx.(*Tx)
		for _, k := range keys {
			if _, err := tx.ExecContext(ctx, `INSERT INTO kv (k, v) VALUES (?, 1)`, k); err != nil {
				return err
			}
		}
		rows, err := tx.QueryContext(ctx, all, 0) // unprepared: prepared after the transaction
		if err != nil {
			return err
		}
		_, err = ScanSet(rows, err)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if db.stmts.get(all) == nil {
		t.Fatal("the query was not cached after its first transaction")
	}
	var pairs []string
	if err := db.Update(ctx, func(stx store.Tx) error {
		tx := stx.(*Tx)
		outer, err := tx.QueryContext(ctx, all, 0)
		if err != nil {
			return err
		}
		defer outer.Close()
		if _, ok := tx.bound.rows[tx.bound.stmts[db.stmts.get(all)]]; !ok {
			t.Error("the outer rows were not read with the cached statement")
		}
		for outer.Next() {
			var o string
			if err := outer.Scan(&o); err != nil {
				return err
			}
			var first string
			if err := tx.QueryRowContext(ctx, all, 0).Scan(&first); err != nil {
				return fmt.Errorf("one row of the same query: %w", err)
			}
			inner, err := tx.QueryContext(ctx, all, 0)
			if err != nil {
				return err
			}
			for inner.Next() {
				var i string
				if err := inner.Scan(&i); err != nil {
					inner.Close()
					return err
				}
				pairs = append(pairs, first+o+i)
			}
			if err := inner.Close(); err != nil {
				return err
			}
		}
		if err := outer.Err(); err != nil {
			return err
		}
		outer.Close()
		// Closed, the rows give their statement back.
		if tx.stmt(ctx, db.stmts.get(all)) == nil {
			t.Error("the statement is still held after its rows were closed")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, o := range keys {
		for _, i := range keys {
			want = append(want, "a"+o+i)
		}
	}
	if fmt.Sprint(pairs) != fmt.Sprint(want) {
		t.Errorf("nested reads of one query gave %v, want %v", pairs, want)
	}
}
