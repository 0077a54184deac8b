package server

import (
	"fmt"

	"github.com/prsaga/prsaga/platform/service"
	psqlite "github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/platform/store"
	pydb "github.com/prsaga/prsaga/platform/ydb"
	"github.com/prsaga/prsaga/services/notifier"
	"github.com/prsaga/prsaga/services/notifier/httpapi"
	nsqlite "github.com/prsaga/prsaga/services/notifier/sqlite"
	nydb "github.com/prsaga/prsaga/services/notifier/ydb"
)

// Store is the notifier's tables on either store: what the handler needs
// (notifier.Store) and what the watchers API needs (httpapi.Store).
type Store interface {
	notifier.Store
	httpapi.Store
}

var (
	_ Store = (*nsqlite.Store)(nil)
	_ Store = (*nydb.Store)(nil)
)

// Adapter returns the notifier's tables on db's store (SQLite or YDB).
func Adapter(db store.DB) (Store, error) {
	st, err := adapters.For(db)
	if err != nil {
		return nil, fmt.Errorf("notifier: %w", err)
	}
	return st, nil
}

var adapters = service.Tables[Store]{
	SQLite: func(db *psqlite.DB) Store { return &nsqlite.Store{DB: db} },
	YDB:    func(db *pydb.DB) Store { return &nydb.Store{DB: db} },
}
