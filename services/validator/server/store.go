package server

import (
	"fmt"

	"github.com/prsaga/prsaga/platform/service"
	psqlite "github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/platform/store"
	pydb "github.com/prsaga/prsaga/platform/ydb"
	"github.com/prsaga/prsaga/services/validator"
	vsqlite "github.com/prsaga/prsaga/services/validator/sqlite"
	vydb "github.com/prsaga/prsaga/services/validator/ydb"
)

// Adapter returns the validator's tables on db's store (SQLite or YDB).
func Adapter(db store.DB) (validator.Store, error) {
	st, err := adapters.For(db)
	if err != nil {
		return nil, fmt.Errorf("validator: %w", err)
	}
	return st, nil
}

var adapters = service.Tables[validator.Store]{
	SQLite: func(db *psqlite.DB) validator.Store { return vsqlite.NewStore(db) },
	YDB:    func(db *pydb.DB) validator.Store { return vydb.NewStore(db) },
}
