package ydb

import (
	"fmt"

	pydb "github.com/prsaga/prsaga/platform/ydb"
	"github.com/prsaga/prsaga/services/ledger"
)

// EventsOf lists the events recorded for a PR within the transaction,
// oldest first, at most ledger.MaxRunEvents (idx_event_pr).
func (t *Tx) EventsOf(prID string) ([]ledger.Event, error) {
	out, err := pydb.CollectTx(t.tx, qEventsOfPR, prEventsParamsUpTo(prID, ledger.MaxRunEvents), scanEvent)
	if err != nil {
		return nil, fmt.Errorf("read events of %s: %w", prID, err)
	}
	return out, nil
}
