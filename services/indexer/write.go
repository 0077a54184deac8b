package indexer

import (
	"context"
	"errors"
	"time"
)

// write upserts the items' documents, in one write when it can, and records
// each item's outcome in it: written, or the attempts made and the last
// error. Each attempt writes what is left in one call; if that fails and
// more than one document is left, each is written alone, so that one
// document the index refuses does not fail the others. Between attempts it
// waits the backoff and reopens the index. It stops at once when the
// context ends or the index is closed by its owner: the items not written
// keep that error.
func (x *Indexer) write(ctx context.Context, items []item) {
	attempts := x.Attempts
	if attempts <= 0 {
		attempts = DefaultAttempts
	}
	backoff := x.Backoff
	if len(backoff) == 0 {
		backoff = DefaultBackoff
	}
	left := make([]*item, 0, len(items))
	for i := range items {
		left = append(left, &items[i])
	}
	for attempt := 1; len(left) > 0; attempt++ {
		err := x.upsert(ctx, left...)
		for _, it := range left {
			it.attempts, it.err, it.written = attempt, err, err == nil
		}
		if err == nil || stopping(ctx, err) {
			return
		}
		if len(left) > 1 {
			left = x.eachAlone(ctx, left)
			if len(left) == 0 || stopping(ctx, left[0].err) {
				return
			}
		}
		if attempt >= attempts {
			return
		}
		left[0].log.WarnContext(ctx, "index write failed; reopening the index", "attempt", attempt, "documents", len(left), "err", left[0].err)
		t := time.NewTimer(backoff[min(attempt, len(backoff))-1])
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		if rerr := x.Index.Reopen(); rerr != nil {
			if errors.Is(rerr, ErrClosed) {
				for _, it := range left {
					it.err = rerr
				}
				return
			}
			left[0].log.WarnContext(ctx, "reopening the index failed", "err", rerr)
		}
	}
}

// eachAlone writes each item's document in a write of its own, after a
// write of them all failed, and returns those that failed again (their
// error recorded). When the context ends or the index is closed, the rest
// are not tried: they and those that failed are returned with that error,
// to be redelivered.
func (x *Indexer) eachAlone(ctx context.Context, items []*item) []*item {
	var failed []*item
	for i, it := range items {
		err := x.upsert(ctx, it)
		it.err, it.written = err, err == nil
		if err == nil {
			continue
		}
		if stopping(ctx, err) {
			failed = append(failed, items[i:]...)
			for _, f := range failed {
				f.err = err
			}
			return failed
		}
		failed = append(failed, it)
	}
	if len(failed) > 0 && len(failed) < len(items) {
		failed[0].log.WarnContext(ctx, "index batch failed; some documents were refused alone",
			"documents", len(items), "refused", len(failed))
	}
	return failed
}

func (x *Indexer) upsert(ctx context.Context, items ...*item) error {
	docs := make([]Doc, len(items))
	for i, it := range items {
		docs[i] = it.doc
	}
	return x.Index.Upsert(ctx, docs...)
}

// stopping reports an error that is no failure of the write: this instance
// is stopping, and the event is to be redelivered.
func stopping(ctx context.Context, err error) bool {
	return ctx.Err() != nil || errors.Is(err, ErrClosed)
}
