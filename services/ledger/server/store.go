package server

import (
	"context"
	"fmt"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/service"
	psqlite "github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/platform/store"
	pydb "github.com/prsaga/prsaga/platform/ydb"
	"github.com/prsaga/prsaga/services/ledger"
	"github.com/prsaga/prsaga/services/ledger/httpapi"
	ledgersqlite "github.com/prsaga/prsaga/services/ledger/sqlite"
	ledgerydb "github.com/prsaga/prsaga/services/ledger/ydb"
)

// Store is the ledger's tables on either store: the API's reads, the
// watchdog's, reliable publishing, and the projection's transaction.
type Store interface {
	httpapi.Sagas
	httpapi.Outbox
	ledger.WatchdogStore
	// Check reports whether the ledger's tables exist.
	Check(ctx context.Context) error
	// StateCounts counts sagas per state with the oldest of each.
	StateCounts(ctx context.Context) (map[contracts.State]ledger.StateCount, error)
	// Bind is the ledger's view of an open transaction of the store (the
	// runner's, so that the projection commits with the inbox and outbox).
	Bind(tx store.Tx) (ledger.Tx, error)
}

var (
	_ Store = (*ledgersqlite.Store)(nil)
	_ Store = (*ledgerydb.Store)(nil)
)

// Adapter returns the ledger's tables on db's store (SQLite or YDB).
func Adapter(db store.DB) (Store, error) {
	st, err := adapters.For(db)
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	return st, nil
}

var adapters = service.Tables[Store]{
	SQLite: func(db *psqlite.DB) Store { return ledgersqlite.NewStore(db) },
	YDB:    func(db *pydb.DB) Store { return ledgerydb.NewStore(db) },
}
