package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/store"
	"github.com/prsaga/prsaga/services/ledger"

	psqlite "github.com/prsaga/prsaga/platform/sqlite"
)

var _ ledger.BodyPruner = (*Tables)(nil)

// PruneBodies empties the bodies of the events of at most limit merged
// sagas in one short write transaction: the sagas through idx_saga_state
// (state, updated_at), their events through idx_event_pr. The state is
// read in the same transaction as the update, so a saga is MERGED when
// its bodies go.
func (s *Tables) PruneBodies(ctx context.Context, cutoff time.Time, after ledger.Cursor, limit int) (ledger.Cursor, int, int64, error) {
	next, sagas, bodies := after, 0, int64(0)
	err := s.db.Update(ctx, func(stx store.Tx) error {
		next, sagas, bodies = after, 0, 0
		tx, err := psqlite.TxOf(stx)
		if err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT pr_id, updated_at FROM pr_saga
			WHERE state = ? AND updated_at < ? AND (updated_at, pr_id) > (?, ?)
			ORDER BY updated_at, pr_id LIMIT ?`,
			contracts.StateMerged, micros(cutoff), micros(after.UpdatedAt), after.PRID, limit)
		if err != nil {
			return fmt.Errorf("read merged sagas: %w", err)
		}
		var prs []string
		for rows.Next() {
			var at int64
			if err := rows.Scan(&next.PRID, &at); err != nil {
				rows.Close()
				return fmt.Errorf("read merged sagas: %w", err)
			}
			next.UpdatedAt = fromMicros(at)
			prs = append(prs, next.PRID)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("read merged sagas: %w", err)
		}
		for _, pr := range prs {
			res, err := tx.ExecContext(ctx, `UPDATE saga_event SET event = '' WHERE pr_id = ? AND event != ''`, pr)
			if err != nil {
				return fmt.Errorf("prune event bodies of %s: %w", pr, err)
			}
			n, _ := res.RowsAffected()
			bodies += n
		}
		sagas = len(prs)
		return nil
	})
	if err != nil {
		return after, 0, 0, err
	}
	return next, sagas, bodies, nil
}
