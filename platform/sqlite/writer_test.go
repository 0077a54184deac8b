package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prsaga/prsaga/platform/store"
)

// A statement is prepared once on the write connection and reused by every
// unit and every transaction after — also those run again with a
// savepoint per unit after one failed — and every unit's writes land as
// before.
func TestWriteStatementsArePreparedOnce(t *testing.T) {
	db := openGroupDB(t)
	ctx := context.Background()
	const insert = `INSERT INTO kv (k, v) VALUES (?, 1)`
	var seen []*wstmt
	begins := map[*wstmt]bool{}
	exec := func(tx *Tx, k string) error {
		if _, err := tx.ExecContext(ctx, insert, k); err != nil {
			return err
		}
		seen = append(seen, db.wr.stmts[insert])
		begins[db.wr.stmts[sqlBegin]] = true
		return nil
	}
	fns := make([]func(store.Tx) error, 4)
	for i := range fns {
		fns[i] = func(stx store.Tx) error {
			if err := exec(stx.(*Tx), fmt.Sprint("k", i)); err != nil {
				return err
			}
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
	if err := db.Update(ctx, func(stx store.Tx) error { return exec(stx.(*Tx), "later") }); err != nil {
		t.Fatal(err)
	}
	// Two runs of the four units (without savepoints, then with) and one
	// later transaction.
	if len(seen) < 5 {
		t.Fatalf("the insert ran %d times", len(seen))
	}
	for i, s := range seen {
		if s == nil || s != seen[0] || s.temp {
			t.Fatalf("run %d of the insert used statement %p (temp %v), the first %p", i, s, s != nil && s.temp, seen[0])
		}
	}
	// BEGIN too: one statement, prepared at Open, for every transaction.
	if len(begins) != 1 || begins[nil] {
		t.Errorf("the transactions began with %d BEGIN statements, want the one cached", len(begins))
	}
	for _, k := range []string{"k0", "k2", "k3", "later"} {
		if !has(t, db, k) {
			t.Errorf("%s not committed", k)
		}
	}
	if has(t, db, "k1") {
		t.Error("the failed unit's write was committed")
	}
}

// A query of many rows in a transaction runs its cached statement, and
// while its rows are open the same query — a nested loop over it, or the
// same SQL as one row — runs on a statement of its own instead of
// resetting the rows under their reader: every loop reads every row.
func TestQueryRowsHoldTheirStatementUntilClosed(t *testing.T) {
	db := openGroupDB(t)
	ctx := context.Background()
	const all = `SELECT k FROM kv WHERE v >= ? ORDER BY k`
	keys := []string{"a", "b", "c"}
	var pairs []string
	if err := db.Update(ctx, func(stx store.Tx) error {
		tx := stx.(*Tx)
		for _, k := range keys {
			if _, err := tx.ExecContext(ctx, `INSERT INTO kv (k, v) VALUES (?, 1)`, k); err != nil {
				return err
			}
		}
		outer, err := tx.QueryContext(ctx, all, 0)
		if err != nil {
			return err
		}
		defer outer.Close()
		if outer.st != db.wr.stmts[all] || !outer.st.busy {
			t.Error("the outer rows were not read with the cached statement, marked busy")
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
			if !inner.st.temp {
				t.Error("the inner rows share the outer rows' statement")
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
		if db.wr.stmts[all].busy {
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

// Rows a unit leaves open are closed when the transaction ends, which
// commits; the rows answer as closed ones afterwards, and so does the
// unit's Tx (database/sql's Tx behaves so too).
func TestRowsLeftOpenCloseWithTheTransaction(t *testing.T) {
	db := openGroupDB(t)
	ctx := context.Background()
	var left *Rows
	var kept *Tx
	if err := db.Update(ctx, func(stx store.Tx) error {
		tx := stx.(*Tx)
		kept = tx
		for _, k := range []string{"x", "y"} {
			if _, err := tx.ExecContext(ctx, `INSERT INTO kv (k, v) VALUES (?, 1)`, k); err != nil {
				return err
			}
		}
		var err error
		left, err = tx.QueryContext(ctx, `SELECT k FROM kv ORDER BY k`)
		if err == nil && !left.Next() {
			err = fmt.Errorf("no first row: %v", left.Err())
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if !has(t, db, "x") || !has(t, db, "y") {
		t.Error("the transaction did not commit")
	}
	if left.Next() {
		t.Error("rows read on after their transaction ended")
	}
	var k string
	if err := left.Scan(&k); err == nil {
		t.Error("Scan of rows closed with their transaction succeeded")
	}
	if _, err := kept.ExecContext(ctx, `INSERT INTO kv (k, v) VALUES ('z', 1)`); !errors.Is(err, sql.ErrTxDone) {
		t.Errorf("a statement after the transaction: %v, want sql.ErrTxDone", err)
	}
	if db.wr.stmts[`SELECT k FROM kv ORDER BY k`].busy {
		t.Error("the statement stayed held by rows closed with the transaction")
	}
}

// A unit that panics rolls its transaction back and the panic reaches the
// caller; the write connection stays the same and is not left in a
// transaction: the next one commits.
func TestPanicKeepsTheWriteConnection(t *testing.T) {
	db := openGroupDB(t)
	ctx := context.Background()
	if err := db.Update(ctx, func(stx store.Tx) error {
		_, err := stx.(*Tx).ExecContext(ctx, `INSERT INTO kv (k, v) VALUES ('before', 1)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	conn := db.wr.conn
	func() {
		defer func() {
			if p := recover(); p != "boom" {
				t.Errorf("recovered %v, want the unit's panic", p)
			}
		}()
		db.Update(ctx, func(stx store.Tx) error {
			if _, err := stx.(*Tx).ExecContext(ctx, `INSERT INTO kv (k, v) VALUES ('panicked', 1)`); err != nil {
				return err
			}
			panic("boom")
		})
	}()
	if err := db.Update(ctx, func(stx store.Tx) error {
		_, err := stx.(*Tx).ExecContext(ctx, `INSERT INTO kv (k, v) VALUES ('after', 1)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if db.wr.conn != conn {
		t.Error("the write connection was replaced after a panic")
	}
	if has(t, db, "panicked") || !has(t, db, "after") {
		t.Errorf("panicked committed: %v, after committed: %v", has(t, db, "panicked"), has(t, db, "after"))
	}
}

// Differential: a write transaction's rows scan into every kind of
// destination exactly as database/sql's do (the reader pool's rows are
// database/sql's) — the same value, or an error for both.
func TestScanConvertsAsDatabaseSQL(t *testing.T) {
	db := openGroupDB(t)
	ctx := context.Background()
	exprs := []string{`42`, `-7`, `0`, `1`, `2.5`, `'text'`, `'17'`, `'true'`, `''`, `x'00ff'`, `x''`, `NULL`,
		`9223372036854775807`, `'2026-12-05T10:00:00Z'`, `300`, `'1e3'`}
	type named string
	type small int8
	dests := []func() any{
		func() any { return new(string) }, func() any { return new(int) }, func() any { return new(int64) },
		func() any { return new(int32) }, func() any { return new(uint8) }, func() any { return new(uint64) },
		func() any { return new(float64) }, func() any { return new(float32) }, func() any { return new(bool) },
		func() any { return new([]byte) }, func() any { return new(any) }, func() any { return new(time.Time) },
		func() any { return new(*string) }, func() any { return new(*int64) }, func() any { return new(named) },
		func() any { return new(small) }, func() any { return new(sql.NullString) },
		func() any { return new(sql.NullInt64) }, func() any { return new(sql.NullBool) },
		func() any { return new(sql.Null[float64]) }, func() any { return new(sql.RawBytes) },
	}
	for _, e := range exprs {
		q := `SELECT ` + e
		for _, mk := range dests {
			want, werr := mk(), error(nil)
			werr = db.Reader().QueryRowContext(ctx, q).Scan(want)
			got, gerr := mk(), error(nil)
			if err := db.Update(ctx, func(stx store.Tx) error {
				gerr = stx.(*Tx).QueryRowContext(ctx, q).Scan(got)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			name := fmt.Sprintf("%s into %T", e, want)
			if (werr != nil) != (gerr != nil) {
				t.Errorf("%s: database/sql: %v; the writer: %v", name, werr, gerr)
				continue
			}
			if werr == nil && !reflect.DeepEqual(deref(want), deref(got)) {
				t.Errorf("%s: database/sql gave %#v, the writer %#v", name, deref(want), deref(got))
			}
		}
	}
}

// deref is what a scanned destination holds (through a pointer to a
// pointer too).
func deref(p any) any {
	v := reflect.ValueOf(p).Elem()
	if v.Kind() == reflect.Pointer && !v.IsNil() {
		return v.Elem().Interface()
	}
	return v.Interface()
}

// Differential: arguments bind as database/sql binds them — named and
// sized numbers, nil pointers, Valuers, sql.Named — the stored value and
// its type read back the same through both.
func TestArgumentsBindAsDatabaseSQL(t *testing.T) {
	db := openGroupDB(t)
	ctx := context.Background()
	if _, err := db.w.ExecContext(ctx, `CREATE TABLE anyv (k TEXT PRIMARY KEY, v)`); err != nil {
		t.Fatal(err)
	}
	type state string
	var nilText *string
	text := "pointed"
	args := []any{int64(5), 7, int8(-3), uint16(9), uint64(1 << 40), 2.5, float32(0.5), true, false, "s", state("MERGED"),
		[]byte{1, 2}, []byte{}, nil, nilText, &text, time.Date(2026, 12, 5, 10, 0, 0, 123, time.UTC),
		sql.NullString{String: "n", Valid: true}, sql.NullInt64{}, valuer{}}
	for i, a := range args {
		if _, err := db.w.ExecContext(ctx, `INSERT INTO anyv (k, v) VALUES (?, ?)`, fmt.Sprint("sql", i), a); err != nil {
			t.Fatalf("database/sql, argument %d (%T): %v", i, a, err)
		}
		if err := db.Update(ctx, func(stx store.Tx) error {
			_, err := stx.(*Tx).ExecContext(ctx, `INSERT INTO anyv (k, v) VALUES (:k, :v)`,
				sql.Named("k", fmt.Sprint("w", i)), sql.Named("v", a))
			return err
		}); err != nil {
			t.Fatalf("the writer, argument %d (%T): %v", i, a, err)
		}
		var st, wt, sv, wv string
		if err := db.Reader().QueryRowContext(ctx, `SELECT typeof(v), quote(v) FROM anyv WHERE k = ?`, fmt.Sprint("sql", i)).Scan(&st, &sv); err != nil {
			t.Fatal(err)
		}
		if err := db.Reader().QueryRowContext(ctx, `SELECT typeof(v), quote(v) FROM anyv WHERE k = ?`, fmt.Sprint("w", i)).Scan(&wt, &wv); err != nil {
			t.Fatal(err)
		}
		if st != wt || sv != wv {
			t.Errorf("argument %d (%T %v): database/sql stored %s %s, the writer %s %s", i, a, a, st, sv, wt, wv)
		}
	}
	// What database/sql refuses, the writer refuses too.
	bad := struct{ X int }{1}
	_, werr := db.w.ExecContext(ctx, `INSERT INTO anyv (k, v) VALUES ('bad', ?)`, bad)
	err := db.Update(ctx, func(stx store.Tx) error {
		_, err := stx.(*Tx).ExecContext(ctx, `INSERT INTO anyv (k, v) VALUES ('bad', ?)`, bad)
		return err
	})
	if werr == nil || err == nil || !strings.Contains(err.Error(), "argument") {
		t.Errorf("a struct argument: database/sql %v, the writer %v", werr, err)
	}
}

type valuer struct{}

func (valuer) Value() (driver.Value, error) { return "valued", nil }
