package sqlite

import (
	"context"
	"fmt"

	"github.com/prsaga/prsaga/platform/store"
	"github.com/prsaga/prsaga/services/ledger"

	psqlite "github.com/prsaga/prsaga/platform/sqlite"
)

var _ ledger.Repairer = (*Tables)(nil)

// Repair replaces the PR's row and transitions by c.Want and
// c.WantTransitions and records the audit row, in one transaction. The
// row keeps the re-derived version (not the live one plus one): the log
// says how many writes the row had. saga_state_count follows through its
// triggers.
func (s *Tables) Repair(ctx context.Context, c ledger.SagaCheck, a ledger.RepairAudit) error {
	before, err := ledger.AuditJSON(c.Live, c.LiveTransitions)
	if err != nil {
		return err
	}
	after, err := ledger.AuditJSON(c.Want, c.WantTransitions)
	if err != nil {
		return err
	}
	return s.db.Update(ctx, func(stx store.Tx) error {
		tx, err := psqlite.TxOf(stx)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM pr_saga WHERE pr_id = ?`, c.PRID); err != nil {
			return fmt.Errorf("repair %s: %w", c.PRID, err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM saga_transition WHERE pr_id = ?`, c.PRID); err != nil {
			return fmt.Errorf("repair %s: %w", c.PRID, err)
		}
		if w := c.Want; w.Exists {
			if _, err := tx.ExecContext(ctx, `INSERT INTO pr_saga (`+sagaColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				w.PRID, w.Repo, w.CorrelationID, w.State, w.FailedStep, w.LastError, w.TimedOut, w.Attempts,
				w.MergeSHA, w.Merged, w.Version, micros(w.CreatedAt), micros(w.UpdatedAt)); err != nil {
				return fmt.Errorf("repair %s: %w", c.PRID, err)
			}
		}
		for _, t := range c.WantTransitions {
			if _, err := tx.ExecContext(ctx, `INSERT INTO saga_transition
				(pr_id, seq, correlation_id, from_state, to_state, reason, event_id, inferred, actor, at)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				c.PRID, t.Seq, t.CorrelationID, t.From, t.To, t.Reason, t.EventID, t.Inferred, t.Actor, micros(t.At)); err != nil {
				return fmt.Errorf("repair transition %d of %s: %w", t.Seq, c.PRID, err)
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO saga_repair (pr_id, repaired_at, actor, reason, before, after)
			VALUES (?, ?, ?, ?, ?, ?)`, c.PRID, micros(a.At), a.Actor, a.Reason, before, after); err != nil {
			return fmt.Errorf("audit repair of %s: %w", c.PRID, err)
		}
		return nil
	})
}
