package ledger

import (
	"context"
	"log/slog"
	"time"
)

// Retention of event bodies (design §5 "Retention"). saga_event keeps
// every event the ledger projected; its body (the whole CloudEvent) is
// most of its size. Once a saga has ended MERGED nothing needs the bodies
// of its events any more: no retry replays them (a retry needs
// MERGE_FAILED), and the row and its transitions stay as the history.
// Bodies of MERGE_FAILED and in-flight sagas are never pruned: a retry
// replays the failed step's trigger from them. The event rows themselves
// stay (id, type, status, reason, time): they keep deduplicating
// redeliveries and show in a run's history; a PR whose bodies are gone is
// no longer verifiable from the log (prsaga ledger verify counts it).

// BodyPruner is a store that empties event bodies in bounded batches.
type BodyPruner interface {
	// PruneBodies empties the saga_event bodies of at most limit sagas
	// that are MERGED, were last updated before cutoff, and come after
	// `after` in (updated_at, pr_id) order. It returns the last saga it
	// visited (after itself when none), how many it visited and how many
	// bodies it emptied.
	PruneBodies(ctx context.Context, cutoff time.Time, after Cursor, limit int) (next Cursor, sagas int, bodies int64, err error)
}

// BodyRetention prunes the event bodies of merged sagas older than Keep,
// every Interval, Batch sagas per write transaction. Not safe for
// concurrent use: one loop owns it.
type BodyRetention struct {
	Keep     time.Duration // 0 keeps every body forever
	Interval time.Duration // pause between rounds; 0 prunes nothing
	Batch    int           // sagas per transaction; default 100
	Now      func() time.Time
	// Pruned, when set, is told how many bodies each batch emptied.
	Pruned func(rows int64)
	Log    *slog.Logger

	// after is where the previous rounds stopped: a MERGED saga does not
	// move again, so a round starts after the last one it pruned instead
	// of reading every merged saga again. A restart begins at the start
	// once (sagas already pruned have no body left to empty).
	after Cursor
}

// Round prunes everything due, batch by batch, and returns how many
// bodies it emptied.
func (r *BodyRetention) Round(ctx context.Context, p BodyPruner) (int64, error) {
	if r.Keep <= 0 {
		return 0, nil
	}
	batch := r.Batch
	if batch <= 0 {
		batch = 100
	}
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	cutoff := now().Add(-r.Keep)
	var total int64
	for ctx.Err() == nil {
		next, sagas, n, err := p.PruneBodies(ctx, cutoff, r.after, batch)
		if err != nil {
			return total, err
		}
		r.after = next
		total += n
		if n > 0 && r.Pruned != nil {
			r.Pruned(n)
		}
		if sagas < batch {
			break
		}
	}
	return total, ctx.Err()
}

// Run runs rounds every Interval until ctx ends.
func (r *BodyRetention) Run(ctx context.Context, p BodyPruner) {
	if r.Keep <= 0 || r.Interval <= 0 {
		return
	}
	t := time.NewTicker(r.Interval)
	defer t.Stop()
	for {
		if _, err := r.Round(ctx, p); err != nil && ctx.Err() == nil && r.Log != nil {
			r.Log.WarnContext(ctx, "pruning event bodies failed; the next round tries again", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
