package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
)

// stmtCache holds the reader pool's statements, prepared once and reused
// by every read (SQLite parses a statement in tens of µs, a noticeable
// share of a small query).
type stmtCache struct {
	mu    sync.Mutex
	stmts map[string]*sql.Stmt
}

func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for q, s := range c.stmts {
		s.Close()
		delete(c.stmts, q)
	}
}

// The platform's own statements, prepared at Open.
const (
	sqlBegin          = `BEGIN IMMEDIATE`
	sqlCommit         = `COMMIT`
	sqlRollback       = `ROLLBACK`
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
	writes := []string{sqlBegin, sqlCommit, sqlRollback, sqlSavepoint, sqlRollbackTo, sqlRelease, sqlInboxInsert, sqlOutboxInsert, sqlMarkSent}
	err := db.withWriter(ctx, func() error {
		for _, q := range writes {
			if _, err := db.wr.stmt(ctx, q); err != nil {
				return fmt.Errorf("prepare %q: %w", q, err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
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
func (db *DB) QueryContext(ctx context.Context, query string, args ...any) (*Rows, error) {
	s, err := db.readStmt(ctx, query)
	if err != nil {
		return readRows(db.r.QueryContext(ctx, query, args...))
	}
	return readRows(s.QueryContext(ctx, args...))
}

// QueryRowContext is QueryContext for at most one row.
func (db *DB) QueryRowContext(ctx context.Context, query string, args ...any) *Row {
	s, err := db.readStmt(ctx, query)
	if err != nil {
		// *sql.Row carries no error of its own making: let the pool report
		// the same preparation error through an unprepared query.
		return &Row{sr: db.r.QueryRowContext(ctx, query, args...)}
	}
	return &Row{sr: s.QueryRowContext(ctx, args...)}
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
