package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"sync"
)

// The write transactions run on the driver's connection itself, lent by
// database/sql (sql.Conn.Raw), not through *sql.Tx: database/sql's share of
// a saga's CPU was ~3% (a bound statement, an argument slice and a lock
// per statement, and a goroutine per read to watch the transaction's own
// context), for a connection that is only ever used by one transaction at
// a time. The connection, its transaction and its statements are used only
// inside Raw's callback.

// writer is the write connection's driver-level state: the statements
// prepared on it, by query. The pool holds one write connection, lent to
// one caller at a time, so writer is used by one goroutine at a time
// (dtx's mutex covers units that read from several).
type writer struct {
	conn  any // the driver connection stmts were prepared on
	stmts map[string]*wstmt
}

// wstmt is a statement prepared on the write connection.
type wstmt struct {
	s     driver.Stmt
	exec  driver.StmtExecContext
	query driver.StmtQueryContext
	busy  bool // rows read with it are open: it cannot run another query
	temp  bool // prepared for one call (cache full, or the cached one busy)
}

// maxCachedStmts bounds the prepared-statement caches of one database: the
// services use a fixed set of statements; SQL built per call (IN lists of
// varying length) simply stops being cached once the bound is reached.
const maxCachedStmts = 512

// on returns the statements of conn, forgetting those of another
// connection (database/sql replaced a broken one: its statements went
// with it, and must not be touched).
func (w *writer) on(conn any) {
	if w.conn != conn {
		w.conn, w.stmts = conn, map[string]*wstmt{}
	}
}

// stmt returns query's statement, preparing it on first use; one of its
// own when the cached one is held by open rows (SQLite runs a statement
// once at a time) or the cache is full.
func (w *writer) stmt(ctx context.Context, query string) (*wstmt, error) {
	if s := w.stmts[query]; s != nil && !s.busy {
		return s, nil
	}
	c, ok := w.conn.(driver.ConnPrepareContext)
	if !ok {
		return nil, fmt.Errorf("sqlite driver connection %T cannot prepare with a context", w.conn)
	}
	ds, err := c.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	s := &wstmt{s: ds}
	if s.exec, ok = ds.(driver.StmtExecContext); !ok {
		ds.Close()
		return nil, fmt.Errorf("sqlite driver statement %T cannot execute with a context", ds)
	}
	if s.query, ok = ds.(driver.StmtQueryContext); !ok {
		ds.Close()
		return nil, fmt.Errorf("sqlite driver statement %T cannot query with a context", ds)
	}
	if _, cached := w.stmts[query]; cached || len(w.stmts) >= maxCachedStmts {
		s.temp = true
		return s, nil
	}
	w.stmts[query] = s
	return s, nil
}

// exec runs query, of no arguments and no rows (BEGIN, COMMIT).
func (w *writer) exec(ctx context.Context, query string) error {
	s, err := w.stmt(ctx, query)
	if err != nil {
		return err
	}
	if s.temp {
		defer s.s.Close()
	}
	_, err = s.exec.ExecContext(ctx, nil)
	return err
}

// close closes every statement (the database is closing).
func (w *writer) close() {
	for q, s := range w.stmts {
		s.s.Close()
		delete(w.stmts, q)
	}
}

// withWriter runs f while database/sql lends the write connection, db.wr
// holding that connection's statements. A panic in f is carried out of Raw and
// raised again, so that database/sql keeps the connection (it closes one
// whose callback panicked) — f must leave it out of any transaction.
func (db *DB) withWriter(ctx context.Context, f func() error) error {
	c, err := db.w.Conn(ctx)
	if err != nil {
		return fmt.Errorf("write connection: %w", err)
	}
	var panicked any
	err = c.Raw(func(conn any) (err error) {
		defer func() {
			if p := recover(); p != nil {
				panicked = p
			}
		}()
		db.wr.on(conn)
		return f()
	})
	if cerr := c.Close(); err == nil && panicked == nil {
		err = cerr
	}
	if panicked != nil {
		panic(panicked)
	}
	return err
}

// dtx is one driver-level transaction on the write connection, shared by
// the Tx of every unit of a group commit.
type dtx struct {
	mu   sync.Mutex // units may read from several goroutines
	w    *writer
	live bool    // begun, not ended yet
	open []*Rows // rows read in the transaction, closed at its end
}

// end closes what is still open of the transaction's rows (database/sql's
// Tx does so at Commit and Rollback too).
func (d *dtx) end() {
	for _, r := range d.open {
		r.Close()
	}
	d.open = nil
}

// ExecContext executes a statement in the transaction, with a statement
// prepared once per connection and reused.
func (tx *Tx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	tx.d.mu.Lock()
	defer tx.d.mu.Unlock()
	s, nv, err := tx.statement(ctx, query, args)
	if err != nil {
		return nil, err
	}
	if s.temp {
		defer s.s.Close()
	}
	return s.exec.ExecContext(ctx, nv)
}

// statement is query's statement and args for the driver, in a live
// transaction; the caller holds the transaction's lock.
func (tx *Tx) statement(ctx context.Context, query string, args []any) (*wstmt, []driver.NamedValue, error) {
	if !tx.d.live {
		return nil, nil, sql.ErrTxDone
	}
	nv, err := namedValues(args)
	if err != nil {
		return nil, nil, err
	}
	s, err := tx.d.w.stmt(ctx, query)
	if err != nil {
		return nil, nil, err
	}
	return s, nv, nil
}

// Exec is ExecContext with context.Background, as sql.Tx.Exec.
func (tx *Tx) Exec(query string, args ...any) (sql.Result, error) {
	return tx.ExecContext(context.Background(), query, args...)
}

// QueryContext runs a query of any number of rows in the transaction. The
// rows hold their statement until closed (the same query meanwhile runs
// on a statement of its own), at the latest when the transaction ends.
func (tx *Tx) QueryContext(ctx context.Context, query string, args ...any) (*Rows, error) {
	tx.d.mu.Lock()
	defer tx.d.mu.Unlock()
	s, nv, err := tx.statement(ctx, query, args)
	if err != nil {
		return nil, err
	}
	dr, err := s.query.QueryContext(ctx, nv)
	if err != nil {
		if s.temp {
			s.s.Close()
		}
		return nil, err
	}
	s.busy = true
	r := &Rows{tx: tx, st: s, dr: dr, cols: dr.Columns()}
	tx.d.open = append(tx.d.open, r)
	return r, nil
}

// Query is QueryContext with context.Background, as sql.Tx.Query.
func (tx *Tx) Query(query string, args ...any) (*Rows, error) {
	return tx.QueryContext(context.Background(), query, args...)
}

// QueryRowContext runs a query expected to return at most one row.
func (tx *Tx) QueryRowContext(ctx context.Context, query string, args ...any) *Row {
	rows, err := tx.QueryContext(ctx, query, args...)
	return &Row{rows: rows, err: err}
}

// QueryRow is QueryRowContext with context.Background, as sql.Tx.QueryRow.
func (tx *Tx) QueryRow(query string, args ...any) *Row {
	return tx.QueryRowContext(context.Background(), query, args...)
}

// release frees s once the rows read with it are closed.
func (tx *Tx) release(s *wstmt) {
	tx.d.mu.Lock()
	defer tx.d.mu.Unlock()
	if s.temp {
		s.s.Close()
		return
	}
	s.busy = false
}

// namedValues converts a statement's arguments for the driver.
func namedValues(args []any) ([]driver.NamedValue, error) {
	if len(args) == 0 {
		return nil, nil
	}
	nv := make([]driver.NamedValue, len(args))
	for i, a := range args {
		if n, ok := a.(sql.NamedArg); ok {
			v, err := driverValue(n.Value)
			if err != nil {
				return nil, fmt.Errorf("sql: converting argument %s type: %w", n.Name, err)
			}
			nv[i] = driver.NamedValue{Name: n.Name, Ordinal: i + 1, Value: v}
			continue
		}
		v, err := driverValue(a)
		if err != nil {
			return nil, fmt.Errorf("sql: converting argument $%d type: %w", i+1, err)
		}
		nv[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return nv, nil
}
