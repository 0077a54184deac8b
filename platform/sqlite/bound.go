package sqlite

import (
	"context"
	"database/sql"
	"sync"
)

// bound holds the cached statements bound to one write transaction
// (sql.Tx.StmtContext), shared by every unit of a group commit: binding
// allocates a statement and registers it with the transaction each time,
// and the units of a batch run the same few statements (savepoint, inbox,
// outbox, the service's own) over and over. The transaction closes them
// when it ends, as before.
type bound struct {
	mu    sync.Mutex
	stmts map[*sql.Stmt]*sql.Stmt
	// rows are the last rows read with each bound statement (Tx.QueryContext):
	// while they are open the statement is theirs, and a query that needs it
	// runs unprepared instead.
	rows map[*sql.Stmt]*sql.Rows
}

// stmt returns s bound to the transaction, binding it on first use; nil
// while rows read with it are open (one SQLite statement cannot serve two
// queries at once: running it again would reset the rows under their
// reader).
func (tx *Tx) stmt(ctx context.Context, s *sql.Stmt) *sql.Stmt {
	b := tx.bound
	if b == nil {
		return tx.Tx.StmtContext(ctx, s)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if ts, ok := b.stmts[s]; ok {
		if open(b.rows[ts]) {
			return nil
		}
		return ts
	}
	ts := tx.Tx.StmtContext(ctx, s)
	if b.stmts == nil {
		b.stmts = map[*sql.Stmt]*sql.Stmt{}
	}
	b.stmts[s] = ts
	return ts
}

// reading records that rows hold ts until they are closed.
func (tx *Tx) reading(ts *sql.Stmt, rows *sql.Rows) {
	b := tx.bound
	if b == nil || rows == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.rows == nil {
		b.rows = map[*sql.Stmt]*sql.Rows{}
	}
	b.rows[ts] = rows
}

// open reports whether rows are still being read: Columns fails once they
// are closed — by their reader, by reaching their end, or with the
// transaction — and reads nothing.
func open(rows *sql.Rows) bool {
	if rows == nil {
		return false
	}
	_, err := rows.Columns()
	return err == nil
}
