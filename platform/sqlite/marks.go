package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/prsaga/prsaga/platform/store"
)

// marksMax bounds the ids waiting to be folded and those folded and not
// yet asked for: past it, ids are simply left for the relay's own mark.
const marksMax = 4096

// marks are outbox rows a relay published and JetStream acked, to be
// marked sent by the next write transaction of any caller (fold) instead
// of a transaction of their own: under load a handler's group commit runs
// every few milliseconds, and the mark then costs one statement in it
// rather than a begin, a commit and the WAL frames of the pages it
// touches. The relay still calls MarkSent for every row it holds: the ids
// a commit already marked are skipped, the rest marked there.
type marks struct {
	mu      sync.Mutex
	pending []string
	queued  map[string]bool // ids in pending
	done    map[string]bool // marked by a committed fold, MarkSent not called yet
}

// MarkSoon asks for the rows to be marked sent in the next write
// transaction (outbox.SoonStore). Marking later than the ack is always
// safe: a crash before it republishes, and the copy dies in JetStream's
// dedupe window or the consumers' inbox.
func (db *DB) MarkSoon(ids []string) {
	m := &db.marks
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.queued == nil {
		m.queued, m.done = map[string]bool{}, map[string]bool{}
	}
	for _, id := range ids {
		if len(m.pending) >= marksMax {
			return
		}
		if !m.queued[id] && !m.done[id] {
			m.queued[id] = true
			m.pending = append(m.pending, id)
		}
	}
}

// take hands the pending ids to a transaction about to commit.
func (m *marks) take() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	ids := m.pending
	m.pending = nil
	for _, id := range ids {
		delete(m.queued, id)
	}
	return ids
}

// settle records the outcome of a fold: committed ids are done, the ids
// of a fold that did not commit wait for the next one again.
func (m *marks) settle(ids []string, committed bool) {
	if len(ids) == 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, id := range ids {
		switch {
		case committed && len(m.done) < marksMax:
			m.done[id] = true
		case !committed && !m.queued[id] && len(m.pending) < marksMax:
			m.queued[id] = true
			m.pending = append(m.pending, id)
		}
	}
}

// unfolded returns the ids no committed fold marked, forgetting them all:
// the caller marks those itself.
func (m *marks) unfolded(ids []string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := ids[:0:0]
	for _, id := range ids {
		if m.done[id] {
			delete(m.done, id)
			continue
		}
		out = append(out, id)
	}
	if len(out) > 0 && len(m.pending) > 0 {
		keep := m.pending[:0]
		drop := map[string]bool{}
		for _, id := range out {
			drop[id] = true
		}
		for _, id := range m.pending {
			if drop[id] {
				delete(m.queued, id)
				continue
			}
			keep = append(keep, id)
		}
		m.pending = keep
	}
	return out
}

// fold marks ids sent inside the transaction, in a savepoint of its own:
// a failure rolls back the mark alone (the ids wait for the next fold),
// never the callers' units.
func (db *DB) fold(ctx context.Context, tx *Tx, ids []string, now int64) error {
	list, err := json.Marshal(ids)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, sqlSavepoint); err != nil {
		return fmt.Errorf("savepoint: %w", err)
	}
	if _, err := tx.ExecContext(ctx, sqlMarkSent, now, string(list)); err != nil {
		if _, rerr := tx.ExecContext(ctx, sqlRollbackTo); rerr != nil {
			return fmt.Errorf("roll back to savepoint after %v: %w", err, rerr)
		}
		if _, rerr := tx.ExecContext(ctx, sqlRelease); rerr != nil {
			return fmt.Errorf("release savepoint: %w", rerr)
		}
		return errFoldFailed
	}
	if _, err := tx.ExecContext(ctx, sqlRelease); err != nil {
		return fmt.Errorf("release savepoint: %w", err)
	}
	return nil
}

// errFoldFailed: the fold's statement failed and was rolled back alone.
var errFoldFailed = errors.New("fold of marks rolled back")

// markNow marks ids sent in a transaction of the group commit (with the
// handlers' transactions running meanwhile, it joins the next of them).
func (db *DB) markNow(ctx context.Context, ids []string) error {
	list, err := json.Marshal(ids)
	if err != nil {
		return fmt.Errorf("outbox mark sent: %w", err)
	}
	err = db.Update(ctx, func(stx store.Tx) error {
		tx := stx.(*Tx)
		_, err := tx.ExecContext(tx.ctx, sqlMarkSent, tx.now.UnixMicro(), string(list))
		return err
	})
	if err != nil {
		return fmt.Errorf("outbox mark sent: %w", err)
	}
	return nil
}
