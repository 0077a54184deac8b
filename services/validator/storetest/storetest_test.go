package storetest_test

import (
	"testing"
	"time"

	psqlite "github.com/prsaga/prsaga/platform/sqlite"
	pstoretest "github.com/prsaga/prsaga/platform/store/storetest"
	pydb "github.com/prsaga/prsaga/platform/ydb"
	"github.com/prsaga/prsaga/services/validator/server"
	vsqlite "github.com/prsaga/prsaga/services/validator/sqlite"
	"github.com/prsaga/prsaga/services/validator/storetest"
	vydb "github.com/prsaga/prsaga/services/validator/ydb"
)

// TestStores runs the validator's suite on every store adapter.
func TestStores(t *testing.T) {
	schema := pstoretest.Schema{SQLite: []psqlite.Migrations{vsqlite.Migrations}, YDB: []pydb.Migrations{vydb.Migrations}}
	pstoretest.Stores(t, schema, func(t *testing.T, open pstoretest.Opener) {
		storetest.Run(t, func(t *testing.T, now func() time.Time) storetest.Adapter {
			db := open(t, now)
			st, err := server.Adapter(db)
			if err != nil {
				t.Fatal(err)
			}
			return storetest.Adapter{DB: db, Store: st}
		})
	})
}
