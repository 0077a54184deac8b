package sqlite

import (
	"context"
	"fmt"

	"github.com/prsaga/prsaga/services/ledger"

	psqlite "github.com/prsaga/prsaga/platform/sqlite"
)

// Tables is the ledger's tables in one service database: the queries
// under ledger.Store. Safe for concurrent use.
type Tables struct {
	db *psqlite.DB
}

var _ ledger.Tables = (*Tables)(nil)

// NewTables returns the tables of db, which must have been opened with
// Migrations.
func NewTables(db *psqlite.DB) *Tables { return &Tables{db: db} }

// NewStore returns the ledger's store over db, which must have been opened
// with Migrations.
func NewStore(db *psqlite.DB) *ledger.Store { return ledger.NewStore(db, NewTables(db)) }

// Check reports whether the ledger's tables exist.
func (s *Tables) Check(ctx context.Context) error {
	if _, err := s.db.Reader().ExecContext(ctx, `SELECT 1 FROM pr_saga LIMIT 0`); err != nil {
		return fmt.Errorf("ledger tables missing (open the database with the ledger's migrations): %w", err)
	}
	return nil
}
