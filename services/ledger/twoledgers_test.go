package ledger_test

import (
	"path/filepath"
	"testing"

	"github.com/prsaga/prsaga/platform/racetest"
	psqlite "github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/platform/sqlite/sqlitetest"
	"github.com/prsaga/prsaga/services/ledger"
	ledgersqlite "github.com/prsaga/prsaga/services/ledger/sqlite"
)

// twoLedgers opens one new ledger database file twice, as two ledger
// processes do: the first handle's database and store, and the second's
// store.
func twoLedgers(t testing.TB) (*psqlite.DB, *ledger.Store, *ledger.Store) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ledger.sqlite")
	dbA := sqlitetest.OpenFile(t, path, ledgersqlite.Migrations)
	dbB := sqlitetest.OpenFile(t, path, ledgersqlite.Migrations)
	return dbA, ledgersqlite.NewStore(dbA), ledgersqlite.NewStore(dbB)
}

// atOnce runs do on each store in a goroutine of its own, all released at
// the same moment, and returns their answers in the order of stores.
func atOnce[T any](stores []*ledger.Store, do func(*ledger.Store) (T, error)) ([]T, []error) {
	out, errs := make([]T, len(stores)), make([]error, len(stores))
	racetest.AtOnce(stores, func(i int, s *ledger.Store) { out[i], errs[i] = do(s) })()
	return out, errs
}
