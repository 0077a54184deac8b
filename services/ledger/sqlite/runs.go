package sqlite

import "github.com/prsaga/prsaga/services/ledger"

// EventsOf lists the events recorded for a PR within the transaction,
// oldest first, at most MaxRunEvents (idx_event_pr).
func (t *Tx) EventsOf(prID string) ([]ledger.Event, error) {
	rows, err := t.tx.QueryContext(t.tx.Context(), selectEvents+` WHERE pr_id = ? ORDER BY received_at, event_id LIMIT ?`, prID, ledger.MaxRunEvents)
	return eventsOf(rows, err, "read events of %s", prID)
}
