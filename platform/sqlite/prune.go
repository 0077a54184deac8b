package sqlite

import (
	"context"
	"fmt"
	"os"
	"time"
)

// PruneInbox deletes up to limit inbox entries processed before
// now-olderThan, oldest first, and returns how many. A bounded batch keeps
// the write lock short: the pipeline's transactions wait for one batch,
// never for the whole backlog.
func (db *DB) PruneInbox(ctx context.Context, olderThan time.Duration, limit int) (int64, error) {
	res, err := db.w.ExecContext(ctx, `DELETE FROM inbox WHERE (consumer, event_id) IN
		(SELECT consumer, event_id FROM inbox WHERE processed_at < ? ORDER BY processed_at LIMIT ?)`,
		db.now().Add(-olderThan).UnixMicro(), limit)
	if err != nil {
		return 0, fmt.Errorf("prune inbox: %w", err)
	}
	return res.RowsAffected()
}

// PruneSent deletes up to limit outbox rows sent before now-olderThan and
// returns how many. Unsent rows are never pruned, however old.
func (db *DB) PruneSent(ctx context.Context, olderThan time.Duration, limit int) (int64, error) {
	res, err := db.w.ExecContext(ctx, `DELETE FROM outbox WHERE id IN
		(SELECT id FROM outbox WHERE sent_at IS NOT NULL AND sent_at < ? ORDER BY sent_at LIMIT ?)`,
		db.now().Add(-olderThan).UnixMicro(), limit)
	if err != nil {
		return 0, fmt.Errorf("prune outbox: %w", err)
	}
	return res.RowsAffected()
}

// Sizes reports the rows of the inbox and the outbox, the bytes of the
// database file with its WAL (what retention bounds), of the WAL alone,
// and of its free pages (what Vacuum gives back, down to a tenth of the file).
func (db *DB) Sizes(ctx context.Context) (map[string]int64, error) {
	out := map[string]int64{}
	for _, t := range []string{"inbox", "outbox"} {
		var n int64
		if err := db.r.QueryRowContext(ctx, `SELECT count(*) FROM `+t).Scan(&n); err != nil {
			return nil, fmt.Errorf("size of %s: %w", t, err)
		}
		out[t+"_rows"] = n
	}
	var bytes int64
	for _, suffix := range []string{"", "-wal"} {
		if fi, err := os.Stat(db.path + suffix); err == nil {
			bytes += fi.Size()
		}
	}
	out["file_bytes"] = bytes
	out["wal_bytes"] = fileSize(db.path + "-wal")
	var free, pageSize int64
	if err := db.r.QueryRowContext(ctx, `SELECT * FROM pragma_freelist_count, pragma_page_size`).Scan(&free, &pageSize); err != nil {
		return nil, fmt.Errorf("free pages: %w", err)
	}
	out["free_bytes"] = free * pageSize
	return out, nil
}
