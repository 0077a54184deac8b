package sqlite

import (
	"context"
	"fmt"
	"time"

	psqlite "github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/platform/store"
)

// PruneDeliveries deletes the delivery rows of up to limit runs whose every
// row is delivered and none was updated since now-olderThan, oldest first,
// and returns the rows deleted. The old delivered rows are found through
// their partial index (INDEXED BY: on a table without statistics the
// planner would rather scan the primary key for a GROUP BY), each run's
// rows through the key. A run with any undelivered row keeps all of
// them: its saga failed at NOTIFYING and a retry, however late, must send
// only to the watchers still missing. A finished run's rows are needed only
// while its event can come back (a redelivery, a redriven dead letter):
// the retention setting outlasts both (platform/config).
func (s *Store) PruneDeliveries(ctx context.Context, olderThan time.Duration, limit int) (int64, error) {
	var n int64
	err := s.DB.Update(ctx, func(stx store.Tx) error {
		tx, err := psqlite.TxOf(stx)
		if err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM delivery WHERE correlation_id IN (
		SELECT correlation_id FROM delivery AS d INDEXED BY idx_delivery_delivered_at
		WHERE delivered AND updated_at < ?1
		AND NOT EXISTS (SELECT 1 FROM delivery AS o WHERE o.correlation_id = d.correlation_id
			AND (NOT o.delivered OR o.updated_at >= ?1))
		LIMIT ?2)`, tx.Now().Add(-olderThan).UnixMicro(), limit)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("prune deliveries: %w", err)
	}
	return n, nil
}
