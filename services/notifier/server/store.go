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

// Adapter returns the notifier's tables on db's store (SQLite or YDB).
func Adapter(db store.DB) (Store, error) {
	st, err := adapters.For(db)
	if err != nil {
		return nil, fmt.Errorf("notifier: %w", err)
	}
	return notifier.Tables{Store: st, DB: db}, nil
}

var adapters = service.Tables[notifier.Store]{
	SQLite: func(db *psqlite.DB) notifier.Store { return &nsqlite.Store{DB: db} },
	YDB:    func(db *pydb.DB) notifier.Store { return &nydb.Store{DB: db} },
}
