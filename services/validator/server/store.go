package server

import (
	"context"
	"fmt"
	"time"

	"github.com/prsaga/prsaga/platform/service"
	psqlite "github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/platform/store"
	pydb "github.com/prsaga/prsaga/platform/ydb"
	"github.com/prsaga/prsaga/services/validator"
	"github.com/prsaga/prsaga/services/validator/httpapi"
	vsqlite "github.com/prsaga/prsaga/services/validator/sqlite"
	vydb "github.com/prsaga/prsaga/services/validator/ydb"
)

// Tables are what the handlers read and write of the validator's tables
// inside the deciding transaction (a runner commit), on either store.
type Tables interface {
	Statuses(tx store.Tx, repo, sha string) ([]validator.Status, error)
	Protection(tx store.Tx, repo, branch string) ([]string, bool, error)
	Lock(tx store.Tx, prID string) (validator.Lock, error)
	// PutLock writes the lock in the transaction that read it.
	PutLock(tx store.Tx, prID string, l validator.Lock) error
}

// Store is the tables as the HTTP API and the tests see them: each call
// its own transaction or read.
type Store interface {
	httpapi.Store
	Lock(ctx context.Context, prID string) (validator.Lock, error)
}

var (
	_ Tables = vsqlite.Tables{}
	_ Tables = vydb.Tables{}
	_ Store  = (*vsqlite.Store)(nil)
	_ Store  = (*vydb.Store)(nil)
)

// Adapter returns the validator's tables on db's store (SQLite or YDB);
// now stamps statuses.
func Adapter(db store.DB, now func() time.Time) (Tables, Store, error) {
	a, err := service.Tables[adapter]{
		SQLite: func(db *psqlite.DB) adapter { return adapter{vsqlite.Tables{}, vsqlite.NewStore(db, now)} },
		YDB:    func(db *pydb.DB) adapter { return adapter{vydb.Tables{}, vydb.NewStore(db, now)} },
	}.For(db)
	if err != nil {
		return nil, nil, fmt.Errorf("validator: %w", err)
	}
	return a.tables, a.store, nil
}

type adapter struct {
	tables Tables
	store  Store
}
