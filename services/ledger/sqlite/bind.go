package sqlite

import (
	"fmt"

	psqlite "github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/platform/store"
	"github.com/prsaga/prsaga/services/ledger"
)

// Bind returns the ledger's view of an open transaction of the SQLite
// store (the runner's); a transaction of another store is an error
// wrapping store.ErrWrongTx.
func (s *Tables) Bind(tx store.Tx) (ledger.Tx, error) {
	t, ok := tx.(*psqlite.Tx)
	if !ok {
		return nil, fmt.Errorf("ledger sqlite adapter given %T: %w", tx, store.ErrWrongTx)
	}
	return Bind(t), nil
}
