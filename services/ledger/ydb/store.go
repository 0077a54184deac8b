// Package ydb keeps the ledger's tables (pr_saga, saga_transition,
// saga_event, retry_answer) in its directory of the YDB database: the write
// side as a ledger.Tx bound to the platform's YDB transaction (so that the
// projection commits with the runner's inbox and outbox), and the read side
// the API, the watchdog and `prsaga trace` use.
//
// Every conditional write reads first in the same serializable
// transaction: SaveSaga reads the row's version, then writes the whole row.
// A concurrent writer of the same row invalidates that read, the commit
// fails with ABORTED and DoTx runs the whole function again — which re-reads
// the row, so the projection decides on the winner's row and the loser of
// a direct conditional write sees ledger.ErrConflict. (UPDATE … RETURNING
// would do the same in one statement; read-then-write works on every
// server version.)
package ydb

import (
	"context"
	"fmt"

	"github.com/prsaga/prsaga/platform/store"
	pydb "github.com/prsaga/prsaga/platform/ydb"
	"github.com/prsaga/prsaga/services/ledger"
)

// Tables is the ledger's tables in its YDB directory: the queries under
// ledger.Store. Safe for concurrent use.
type Tables struct {
	db *pydb.DB
}

var _ ledger.Tables = (*Tables)(nil)

// NewStore returns the ledger's store over db, which must have been opened
// with Migrations.
func NewStore(db *pydb.DB) *ledger.Store { return ledger.NewStore(db, &Tables{db: db}) }

// Check reports whether the ledger's tables exist.
func (s *Tables) Check(ctx context.Context) error {
	if err := s.ping(ctx); err != nil {
		return fmt.Errorf("ledger tables missing (open the database with the ledger's migrations): %w", err)
	}
	return nil
}

func (s *Tables) ping(ctx context.Context) error {
	_, err := s.db.QueryRow(ctx, qPing, prKey(""))
	if pydb.IsNoRows(err) {
		return nil
	}
	return err
}

// Ping checks that the database answers.
func (s *Tables) Ping(ctx context.Context) error {
	if err := s.ping(ctx); err != nil {
		return fmt.Errorf("ping ledger store: %w", err)
	}
	return nil
}

// Bind returns the ledger's view of an open transaction of the YDB store
// (the runner's).
func (s *Tables) Bind(tx store.Tx) (ledger.Tx, error) {
	t, err := pydb.TxOf(tx)
	if err != nil {
		return nil, err
	}
	return &Tx{TxOutbox: t, tx: t}, nil
}
