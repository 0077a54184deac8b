package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
)

// maxCachedStmts bounds the prepared-statement cache of one database: the
// services use a fixed set of statements; SQL built per call (IN lists of
// varying length) simply stops being cached once the bound is reached.
const maxCachedStmts = 512

// stmtCache holds statements prepared once on the writer connection and
// reused by every transaction (SQLite parses a statement in tens of µs, a
// noticeable share of a small transaction). A statement is prepared after
// the transaction that first ran it, when the single writer connection is
// free again: preparing on the pool while a transaction holds its only
// connection would wait for that very transaction.
type stmtCache struct {
	mu    sync.Mutex
	stmts map[string]*sql.Stmt
	bad   map[string]bool // failed to prepare: not tried again
}

func (c *stmtCache) get(query string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stmts[query]
}

// prepare prepares the queries not cached yet on pool.
func (c *stmtCache) prepare(ctx context.Context, pool *sql.DB, queries []string) {
	for _, q := range queries {
		c.mu.Lock()
		skip := c.stmts[q] != nil || c.bad[q] || len(c.stmts) >= maxCachedStmts
		c.mu.Unlock()
		if skip {
			continue
		}
		s, err := pool.PrepareContext(ctx, q)
		c.mu.Lock()
		switch {
		case err != nil:
			c.bad[q] = true
		case c.stmts[q] != nil:
			s.Close()
		default:
			c.stmts[q] = s
		}
		c.mu.Unlock()
	}
}

func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for q, s := range c.stmts {
		s.Close()
		delete(c.stmts, q)
	}
}

// The statement methods of Tx shadow those of the embedded *sql.Tx, so
// that every service's statements reuse prepared ones without changing a
// line. A *sql.Row must be scanned before the same query runs again in
// the transaction (they share one SQLite statement). Rows of a query hold
// its statement until they are closed: the same query run meanwhile (a
// nested loop over one query) is prepared for that call alone.

// ExecContext executes a statement in the transaction.
func (tx *Tx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if ts := tx.cached(ctx, query); ts != nil {
		return ts.ExecContext(ctx, args...)
	}
	return tx.Tx.ExecContext(ctx, query, args...)
}

// Exec is ExecContext with context.Background, as sql.Tx.Exec.
func (tx *Tx) Exec(query string, args ...any) (sql.Result, error) {
	return tx.ExecContext(context.Background(), query, args...)
}

// QueryRowContext runs a query expected to return at most one row.
func (tx *Tx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if ts := tx.cached(ctx, query); ts != nil {
		return ts.QueryRowContext(ctx, args...)
	}
	return tx.Tx.QueryRowContext(ctx, query, args...)
}

// QueryContext runs a query of any number of rows in the transaction (the
// validator reads a commit's statuses so on every request: parsing the
// query each time was ~1.5% of a saga's CPU).
func (tx *Tx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if ts := tx.cached(ctx, query); ts != nil {
		rows, err := ts.QueryContext(ctx, args...)
		tx.reading(ts, rows)
		return rows, err
	}
	return tx.Tx.QueryContext(ctx, query, args...)
}

// cached is query's prepared statement bound to the transaction, or nil
// for the query to run unprepared: not prepared yet (it will be after the
// transaction), or held by rows still open.
func (tx *Tx) cached(ctx context.Context, query string) *sql.Stmt {
	s := tx.db.stmts.get(query)
	if s == nil {
		tx.miss(query)
		return nil
	}
	return tx.stmt(ctx, s)
}

// Query is QueryContext with context.Background, as sql.Tx.Query.
func (tx *Tx) Query(query string, args ...any) (*sql.Rows, error) {
	return tx.QueryContext(context.Background(), query, args...)
}

// QueryRow is QueryRowContext with context.Background, as sql.Tx.QueryRow.
func (tx *Tx) QueryRow(query string, args ...any) *sql.Row {
	return tx.QueryRowContext(context.Background(), query, args...)
}

func (tx *Tx) miss(query string) {
	if tx.misses == nil {
		tx.misses = map[string]bool{}
	}
	tx.misses[query] = true
}

// The platform's own statements, prepared at Open.
const (
	sqlSavepoint      = `SAVEPOINT unit`
	sqlRollbackTo     = `ROLLBACK TO unit`
	sqlRelease        = `RELEASE unit`
	sqlInboxInsert    = `INSERT INTO inbox (consumer, event_id, processed_at) VALUES (?, ?, ?) ON CONFLICT(consumer, event_id) DO NOTHING`
	sqlOutboxInsert   = `INSERT INTO outbox (id, subject, headers, body, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT(id) DO NOTHING`
	sqlMarkSent       = `UPDATE outbox SET sent_at = ? WHERE sent_at IS NULL AND id IN (SELECT value FROM json_each(?))`
	sqlInboxProcessed = `SELECT count(*) FROM inbox WHERE consumer = ? AND event_id = ?`
	sqlInboxAny       = `SELECT event_id FROM inbox WHERE consumer = ? AND event_id IN (SELECT value FROM json_each(?))`
	// The limit is a constant: SQLite (built with STAT4) plans with a bound
	// LIMIT's value and re-prepares the statement whenever it changes.
	// Unsent stops reading at the limit it is given.
	sqlOutboxUnsent  = `SELECT id, subject, headers, body, created_at FROM outbox WHERE sent_at IS NULL ORDER BY created_at LIMIT 1024`
	sqlOutboxUnsentN = `SELECT id, subject, headers, body, created_at FROM outbox WHERE sent_at IS NULL ORDER BY created_at LIMIT ?`
	// The unsent rows but those a relay holds (published, not marked yet).
	sqlOutboxUnsentExcept = `SELECT id, subject, headers, body, created_at FROM outbox WHERE sent_at IS NULL
		AND id NOT IN (SELECT value FROM json_each(?)) ORDER BY created_at LIMIT 1024`
)

// readStmts are the platform's reads, prepared on the reader pool.
type readStmts struct {
	processed, processedAny, unsent, unsentExcept *sql.Stmt
}

func (r *readStmts) close() {
	for _, s := range []*sql.Stmt{r.processed, r.processedAny, r.unsent, r.unsentExcept} {
		if s != nil {
			s.Close()
		}
	}
}

// prepare prepares the platform's statements (after the migrations made
// their tables).
func (db *DB) prepare(ctx context.Context) error {
	writes := []string{sqlSavepoint, sqlRollbackTo, sqlRelease, sqlInboxInsert, sqlOutboxInsert, sqlMarkSent}
	db.stmts.prepare(ctx, db.w, writes)
	for _, q := range writes {
		if db.stmts.get(q) == nil {
			return fmt.Errorf("prepare %q failed", q)
		}
	}
	var err error
	if db.reads.processed, err = db.r.PrepareContext(ctx, sqlInboxProcessed); err != nil {
		return fmt.Errorf("prepare inbox lookup: %w", err)
	}
	if db.reads.processedAny, err = db.r.PrepareContext(ctx, sqlInboxAny); err != nil {
		return fmt.Errorf("prepare inbox lookup: %w", err)
	}
	if db.reads.unsentExcept, err = db.r.PrepareContext(ctx, sqlOutboxUnsentExcept); err != nil {
		return fmt.Errorf("prepare outbox scan: %w", err)
	}
	if db.reads.unsent, err = db.r.PrepareContext(ctx, sqlOutboxUnsent); err != nil {
		return fmt.Errorf("prepare outbox scan: %w", err)
	}
	return nil
}

// QueryContext runs a read on the reader pool with a statement prepared
// once and reused (Reader().QueryContext parses it on every call). Safe
// for concurrent use; the query must not write.
func (db *DB) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	s, err := db.readStmt(ctx, query)
	if err != nil {
		return db.r.QueryContext(ctx, query, args...)
	}
	return s.QueryContext(ctx, args...)
}

// QueryRowContext is QueryContext for at most one row.
func (db *DB) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	s, err := db.readStmt(ctx, query)
	if err != nil {
		// *sql.Row carries no error of its own making: let the pool report
		// the same preparation error through an unprepared query.
		return db.r.QueryRowContext(ctx, query, args...)
	}
	return s.QueryRowContext(ctx, args...)
}

// readStmt returns the reader pool's prepared statement for query,
// preparing it on first use (bounded like the writer's cache; past the
// bound, queries are prepared per call).
func (db *DB) readStmt(ctx context.Context, query string) (*sql.Stmt, error) {
	c := &db.rstmts
	c.mu.Lock()
	s, ok := c.stmts[query]
	full := len(c.stmts) >= maxCachedStmts
	c.mu.Unlock()
	if ok {
		return s, nil
	}
	if full {
		return nil, errors.New("statement cache full")
	}
	s, err := db.r.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.stmts[query]; ok {
		s.Close()
		return old, nil
	}
	c.stmts[query] = s
	return s, nil
}
