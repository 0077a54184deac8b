package server

import (
	"context"
	"errors"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/services/ledger"
	ledgersqlite "github.com/prsaga/prsaga/services/ledger/sqlite"
)

// stateCounter is a store that counts sagas per state with the oldest of
// each, reading only the (state, updated_at) index.
type stateCounter interface {
	StateCounts(ctx context.Context) (map[contracts.State]ledger.StateCount, error)
}

// The SQLite store counts them; a store without the method leaves the
// in-flight gauges out of /metrics (the scrape counts a read error).
var _ stateCounter = (*ledgersqlite.Store)(nil)

// StateCounts counts sagas per state with the oldest of each, for the
// in-flight gauges read at every scrape.
func (s *Server) StateCounts(ctx context.Context) (map[contracts.State]ledger.StateCount, error) {
	sc, ok := s.store.(stateCounter)
	if !ok {
		return nil, errors.New("ledger: this store does not count sagas per state")
	}
	return sc.StateCounts(ctx)
}
