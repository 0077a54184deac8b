package sqlite

import (
	"fmt"

	"github.com/prsaga/prsaga/services/ledger"
)

// EventsOf lists the events recorded for a PR within the transaction,
// oldest first, at most MaxRunEvents (idx_event_pr).
func (t *Tx) EventsOf(prID string) ([]ledger.Event, error) {
	rows, err := t.tx.QueryContext(t.tx.Context(), `SELECT event_id, pr_id, correlation_id, type, status, reason,
		received_at, event FROM saga_event WHERE pr_id = ? ORDER BY received_at, event_id LIMIT ?`, prID, ledger.MaxRunEvents)
	if err != nil {
		return nil, fmt.Errorf("read events of %s: %w", prID, err)
	}
	out, err := scanEvents(rows)
	if err != nil {
		return nil, fmt.Errorf("read events of %s: %w", prID, err)
	}
	return out, nil
}
