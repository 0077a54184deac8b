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
}

// stmt returns s bound to the transaction, binding it on first use.
func (tx *Tx) stmt(ctx context.Context, s *sql.Stmt) *sql.Stmt {
	b := tx.bound
	if b == nil {
		return tx.Tx.StmtContext(ctx, s)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if ts, ok := b.stmts[s]; ok {
		return ts
	}
	ts := tx.Tx.StmtContext(ctx, s)
	if b.stmts == nil {
		b.stmts = map[*sql.Stmt]*sql.Stmt{}
	}
	b.stmts[s] = ts
	return ts
}
