package sqlite

import (
	"context"
	"embed"
	"fmt"
	"io/fs"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/prsaga/prsaga/services/ledger"

	psqlite "github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/platform/store"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations is the ledger's schema; open the service's database with it.
var Migrations = psqlite.Migrations{Component: "ledger", FS: mustSub(migrationFiles, "migrations")}

func mustSub(f fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(f, dir)
	if err != nil {
		panic(err) // the directory is embedded above: cannot happen
	}
	return sub
}

// Store is the ledger's tables in one service database. Safe for
// concurrent use.
type Store struct {
	db *psqlite.DB
}

// NewStore returns the store over db, which must have been opened with
// Migrations.
func NewStore(db *psqlite.DB) *Store { return &Store{db: db} }

// Check reports whether the ledger's tables exist.
func (s *Store) Check(ctx context.Context) error {
	if _, err := s.db.Reader().ExecContext(ctx, `SELECT 1 FROM pr_saga LIMIT 0`); err != nil {
		return fmt.Errorf("ledger tables missing (open the database with the ledger's migrations): %w", err)
	}
	return nil
}

// Update runs fn in one write transaction and commits when it returns nil.
// fn may run more than once (lock contention) and must have no side
// effects outside tx.
func (s *Store) Update(ctx context.Context, fn func(tx ledger.Tx) error) error {
	return s.db.Update(ctx, func(tx store.Tx) error {
		t, err := s.Bind(tx)
		if err != nil {
			return err
		}
		return fn(t)
	})
}

// Emit commits events to the outbox in a transaction of their own: the
// relay publishes them. Used to publish what the API accepts reliably.
func (s *Store) Emit(ctx context.Context, evs ...*event.Event) error {
	return s.db.Update(ctx, func(tx store.Tx) error { return tx.Emit(evs...) })
}
