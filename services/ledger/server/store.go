package server

import (
	"fmt"

	"github.com/prsaga/prsaga/platform/service"
	"github.com/prsaga/prsaga/platform/store"
	"github.com/prsaga/prsaga/services/ledger"
	"github.com/prsaga/prsaga/services/ledger/httpapi"
	ledgersqlite "github.com/prsaga/prsaga/services/ledger/sqlite"
	ledgerydb "github.com/prsaga/prsaga/services/ledger/ydb"
)

var (
	_ httpapi.Sagas  = (*ledger.Store)(nil)
	_ httpapi.Outbox = (*ledger.Store)(nil)
)

// Adapter returns the ledger's store over db's tables (SQLite or YDB).
func Adapter(db store.DB) (*ledger.Store, error) {
	st, err := adapters.For(db)
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	return st, nil
}

var adapters = service.Tables[*ledger.Store]{
	SQLite: ledgersqlite.NewStore,
	YDB:    ledgerydb.NewStore,
}
