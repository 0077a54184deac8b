package server

import (
	"context"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/services/ledger"
)

// StateCounts counts sagas per state with the oldest of each, for the
// in-flight gauges read at every scrape.
func (s *Server) StateCounts(ctx context.Context) (map[contracts.State]ledger.StateCount, error) {
	return s.store.StateCounts(ctx)
}
