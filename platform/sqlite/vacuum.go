package sqlite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Auto-vacuum and the returning of freed pages (issue 17).
//
// SQLite reuses the pages a DELETE frees for later rows, so a file whose
// rows are pruned stops growing at its high-water mark, but it never
// shrinks: the free pages stay inside it. With auto_vacuum=INCREMENTAL the
// file keeps the pointer maps that let `PRAGMA incremental_vacuum(N)` move
// pages from the end of the file into free slots and truncate it, N pages
// at a time. The mode must be chosen before the first table is created; a
// file created without it is converted by a VACUUM, which rewrites it.

const (
	// VacuumStepPages is what one incremental_vacuum transaction returns
	// at most: the pipeline's writers wait for one step, never a round.
	VacuumStepPages = 256
	// VacuumMaxSteps bounds one Vacuum call; the next prune round goes on.
	VacuumMaxSteps = 64
	// vacuumSlack is the share of the file's pages left free: the next
	// interval's traffic takes them instead of growing the file again, so
	// a file in its steady state is not shrunk and regrown every round.
	vacuumSlack = 10 // percent
)

// autoVacuumIncremental is PRAGMA auto_vacuum's value for INCREMENTAL.
const autoVacuumIncremental = 2

// ensureIncremental makes the file auto_vacuum=INCREMENTAL. A new file is
// so from its first page (Open's pragmas); a FULL one just switches. A
// file created without it (by a
// version before issue 17) is rewritten by VACUUM, once: crash-safe (the
// copy replaces the old content in one transaction, through the WAL), but
// it reads and writes the whole file and needs room for two more copies
// (the temporary copy and the WAL), so it is skipped, and tried again at
// the next open, when the disk has less room than that. A skipped file
// works as before: freed pages are reused, the file does not shrink.
func (db *DB) ensureIncremental(ctx context.Context) error {
	mode, err := db.autoVacuum(ctx)
	if err != nil || mode == autoVacuumIncremental {
		return err
	}
	if _, err := db.w.ExecContext(ctx, `PRAGMA auto_vacuum=INCREMENTAL`); err != nil {
		return fmt.Errorf("auto_vacuum: %w", err)
	}
	if mode, err = db.autoVacuum(ctx); err != nil || mode == autoVacuumIncremental {
		return err
	}
	size := fileSize(db.path) + fileSize(db.path+"-wal")
	if free, ok := freeBytes(filepath.Dir(db.path)); ok && free < 2*size+(64<<20) {
		db.log.Warn("sqlite: not converting the file to incremental auto-vacuum: too little free disk; it reuses freed pages but does not shrink; next open tries again",
			"path", db.path, "file_bytes", size, "free_bytes", free)
		return nil
	}
	t0 := time.Now()
	// The temporary copy VACUUM builds would otherwise live in memory
	// (temp_store=MEMORY): as big as the file.
	if _, err := db.w.ExecContext(ctx, `PRAGMA temp_store=FILE`); err != nil {
		return fmt.Errorf("convert to incremental auto-vacuum: %w", err)
	}
	_, err = db.w.ExecContext(ctx, `VACUUM`)
	if _, rerr := db.w.ExecContext(ctx, `PRAGMA temp_store=MEMORY`); err == nil && rerr != nil {
		err = rerr
	}
	if err != nil {
		return fmt.Errorf("convert to incremental auto-vacuum (VACUUM): %w", err)
	}
	// The rewrite went through the WAL: put it into the file and give the
	// WAL's room back.
	if _, err := db.w.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		return fmt.Errorf("convert to incremental auto-vacuum (checkpoint): %w", err)
	}
	db.log.Info("sqlite: converted the file to incremental auto-vacuum (one VACUUM)",
		"path", db.path, "bytes_before", size, "bytes_after", fileSize(db.path), "took", time.Since(t0).Round(time.Millisecond).String())
	return nil
}

func (db *DB) autoVacuum(ctx context.Context) (int, error) {
	var mode int
	if err := db.w.QueryRowContext(ctx, `PRAGMA auto_vacuum`).Scan(&mode); err != nil {
		return 0, fmt.Errorf("auto_vacuum: %w", err)
	}
	return mode, nil
}

// Vacuum returns the file's free pages beyond a slack of a tenth of the
// file to the file system, VacuumStepPages per write transaction and at
// most VacuumMaxSteps transactions per call, and returns how many pages
// it returned. A file that is not INCREMENTAL (its conversion was
// skipped) returns none. The WAL is then checkpointed (passively: never
// waiting for readers), which is when the file itself is truncated.
// Safe for concurrent use; called after prune rounds.
func (db *DB) Vacuum(ctx context.Context) (pages int64, err error) {
	for step := 0; step < VacuumMaxSteps && ctx.Err() == nil; step++ {
		free, total, err := db.pages(ctx)
		if err != nil {
			return pages, err
		}
		excess := free - total*vacuumSlack/100
		if excess <= 0 {
			break
		}
		n := min(excess, VacuumStepPages)
		if _, err := db.w.ExecContext(ctx, fmt.Sprintf(`PRAGMA incremental_vacuum(%d)`, n)); err != nil {
			return pages, fmt.Errorf("incremental vacuum: %w", err)
		}
		after, _, err := db.pages(ctx)
		if err != nil {
			return pages, err
		}
		if after >= free { // not INCREMENTAL: nothing moves
			break
		}
		pages += free - after
	}
	if pages > 0 {
		if _, err := db.w.ExecContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`); err != nil {
			return pages, fmt.Errorf("checkpoint after vacuum: %w", err)
		}
	}
	return pages, ctx.Err()
}

// pages reads the free and all pages of the file, as the writer sees it.
func (db *DB) pages(ctx context.Context) (free, total int64, err error) {
	if err := db.w.QueryRowContext(ctx, `PRAGMA freelist_count`).Scan(&free); err != nil {
		return 0, 0, fmt.Errorf("freelist_count: %w", err)
	}
	if err := db.w.QueryRowContext(ctx, `PRAGMA page_count`).Scan(&total); err != nil {
		return 0, 0, fmt.Errorf("page_count: %w", err)
	}
	return free, total, nil
}

func fileSize(path string) int64 {
	if fi, err := os.Stat(path); err == nil {
		return fi.Size()
	}
	return 0
}
