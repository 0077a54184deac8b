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
		// contracts.Follow would read the cause's extensions again:
		// cause.Meta is what Open read from them.
		e, err := contracts.New(StateChangedID(row.PRID, t.Seq, t.EventID), contracts.TypeStateChanged,
			contracts.Source(contracts.ServiceLedger), cause.Event.Subject(), at, sc, cause.Meta.Next(cause.Event.ID()))
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
//
// When the causing event's id is a UUIDv7 (every service's, step.NewID),
// its 48-bit millisecond time leads the id: the ids then grow with time
// like the outbox's other keys, and each announcement's entry in the
// outbox's primary-key index lands at the index's right edge instead of
// on a random page (one page written per commit instead of one per
// announcement). The hash after it keeps the id unique.
func StateChangedID(prID string, seq int64, eventID string) string {
	h := sha256.Sum256([]byte(prID + "\x00" + strconv.FormatInt(seq, 10) + "\x00" + eventID))
	const prefix = "sc-"
	b := make([]byte, 0, len(prefix)+12+32)
	b = append(b, prefix...)
	if ms, ok := uuidV7Time(eventID); ok {
		b = append(b, ms...)
	}
	return string(hex.AppendEncode(b, h[:16]))
}

// uuidV7Time is the 12 hex digits of a canonical UUIDv7's time (lower
// case, as they sort), or false when id is not one.
func uuidV7Time(id string) (string, bool) {
	if len(id) != 36 || id[8] != '-' || id[13] != '-' || id[14] != '7' || id[18] != '-' || id[23] != '-' {
		return "", false
	}
	ms := id[0:8] + id[9:13]
	for i := 0; i < len(ms); i++ {
		if c := ms[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return "", false
		}
	}
	return ms, true
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
		// Attrs, not key-value pairs: slog then boxes and converts nothing.
		attrs := []slog.Attr{
			slog.String("repo", row.Repo),
			slog.String("from_state", string(t.From)),
			slog.String("to_state", string(t.To)),
			slog.String("reason", t.Reason),
			slog.String("failed_step", string(failed)),
			slog.Bool("inferred", t.Inferred),
			slog.Int64("seq", t.Seq),
		}
		tx.AfterCommit(func() { log.LogAttrs(ctx, level, "saga_transition", attrs...) })
	}
}
