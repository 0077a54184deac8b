package ledger

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/prsaga/prsaga/contracts"
)

// announce puts one prsaga.saga.state_changed.v1 per transition into the
// outbox: correlation id of the run, causation = the event, source
// /prsaga/ledger.
func announce(tx Tx, cause contracts.Envelope, row contracts.Row, ts []Transition, at time.Time) error {
	for _, t := range ts {
		sc := contracts.StateChanged{
			PRID:      row.PRID,
			FromState: t.From,
			ToState:   t.To,
			Reason:    t.Reason,
		}
		if t.To == contracts.StateMergeFailed {
			sc.FailedStep = row.FailedStep
		}
		// Inferred transitions to steps before the merge are announced as
		// not merged, even when the event that caused them was a merge.
		sc.Merged = row.Merged && mergedAt(t.To, sc.FailedStep)
		if sc.Merged {
			sc.MergeSHA = row.MergeSHA
		}
		e, err := contracts.Follow(cause.Event, StateChangedID(row.PRID, t.Seq, t.EventID),
			contracts.TypeStateChanged, contracts.ServiceLedger, at, sc)
		if err != nil {
			return fmt.Errorf("build state_changed: %w", err)
		}
		if err := tx.Emit(e); err != nil {
			return err
		}
	}
	return nil
}

// mergedAt reports whether a saga at this position has had its git merge.
func mergedAt(to, failedStep contracts.State) bool {
	switch to {
	case contracts.StateNotifying, contracts.StateIndexing, contracts.StateMerged:
		return true
	case contracts.StateMergeFailed:
		return failedStep == contracts.StateNotifying || failedStep == contracts.StateIndexing
	}
	return false
}

// StateChangedID is the id of the announcement of transition seq of a PR.
// It is derived, not random: a transaction that runs twice, or a relay that
// publishes twice, produces the same id, which JetStream's dedupe and the
// consumers' inboxes drop.
func StateChangedID(prID string, seq int64, eventID string) string {
	h := sha256.Sum256([]byte(prID + "\x00" + strconv.FormatInt(seq, 10) + "\x00" + eventID))
	return "sc-" + hex.EncodeToString(h[:16])
}

// logTransitions writes one saga_transition line per transition once tx
// has committed: INFO, WARN for MERGE_FAILED.
func logTransitions(ctx context.Context, tx Tx, log *slog.Logger, row contracts.Row, ts []Transition) {
	for _, t := range ts {
		level := slog.LevelInfo
		failed := contracts.State("")
		if t.To == contracts.StateMergeFailed {
			level, failed = slog.LevelWarn, row.FailedStep
		}
		attrs := []any{
			"repo", row.Repo,
			"from_state", string(t.From),
			"to_state", string(t.To),
			"reason", t.Reason,
			"failed_step", string(failed),
			"inferred", t.Inferred,
			"seq", t.Seq,
		}
		tx.AfterCommit(func() { log.Log(ctx, level, "saga_transition", attrs...) })
	}
}
