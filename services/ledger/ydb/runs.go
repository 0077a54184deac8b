package ydb

import (
	"fmt"

	"github.com/ydb-platform/ydb-go-sdk/v3/query"

	"github.com/prsaga/prsaga/services/ledger"
)

// EventsOf lists the events recorded for a PR within the transaction,
// oldest first, at most ledger.MaxRunEvents (idx_event_pr).
func (t *Tx) EventsOf(prID string) ([]ledger.Event, error) {
	var out []ledger.Event
	err := t.tx.Query(qEventsOfPR, prEventsParamsUpTo(prID, ledger.MaxRunEvents),
		func(row query.Row) error {
			e, err := scanEvent(row)
			out = append(out, e)
			return err
		})
	if err != nil {
		return nil, fmt.Errorf("read events of %s: %w", prID, err)
	}
	return out, nil
}
