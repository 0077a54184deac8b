package backup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/prsaga/prsaga/platform/durable"
)

// keptPrefix starts the name of every directory a restore moves replaced
// databases into: <DBDir>/pre-restore-<time>-<n>.
const keptPrefix = "pre-restore-"

// keptStamp is the <time> of a kept directory's name.
const keptStamp = "20060102T150405Z"

// reserveKept makes a new kept directory in dbDir, named for now and the
// first sequence number n from 1 whose directory does not exist yet. The
// directory is made with mkdir, which fails when the name exists: two
// restores in one second, or in one process, never share one, so no run
// moves a file over another run's kept file.
func reserveKept(dbDir string, now time.Time) (dir, name string, err error) {
	if err := os.MkdirAll(dbDir, 0o755); err != nil {
		return "", "", err
	}
	stamp := now.UTC().Format(keptStamp)
	for n := 1; n < 10_000; n++ {
		name = fmt.Sprintf("%s%s-%d", keptPrefix, stamp, n)
		dir = filepath.Join(dbDir, name)
		err := os.Mkdir(dir, 0o700)
		if err == nil {
			return dir, name, durable.Sync(dbDir)
		}
		if !errors.Is(err, os.ErrExist) {
			return "", "", err
		}
	}
	return "", "", fmt.Errorf("no free %s%s-<n> directory in %s", keptPrefix, stamp, dbDir)
}

// keptDirs are the kept directories of every restore into dbDir so far,
// oldest first (by name: the time, then the sequence number; a name of
// the older form pre-restore-<time> sorts with its time).
func keptDirs(dbDir string) ([]string, error) {
	ents, err := os.ReadDir(dbDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() && strings.HasPrefix(e.Name(), keptPrefix) {
			out = append(out, filepath.Join(dbDir, e.Name()))
		}
	}
	sort.Strings(out)
	return out, nil
}

// dbSuffixes are the files of one SQLite database: the main file and the
// ones beside it that belong to it (a WAL or hot journal left beside the
// restored file would be replayed into it).
var dbSuffixes = []string{"-wal", "-shm", "-journal", ""}

// moveAside moves the database at dst, with the files beside it, into
// kept. It first folds the WAL into the main file (a checkpoint, then the
// last connection's close removes the WAL), so that one rename moves the
// whole database: a restore killed between two renames cannot leave the
// main file in one kept directory and its WAL in another. A database that
// does not open for that is moved file by file (warned). The main file
// moves last, so that a run killed midway leaves it in place and the next
// run moves it. A name already taken in kept is an error, never replaced.
func moveAside(ctx context.Context, dst, kept string, warn io.Writer) (moved bool, err error) {
	if _, err := os.Lstat(dst); err == nil {
		if err := checkpoint(ctx, dst); err != nil {
			fmt.Fprintf(warn, "warning: %s: the WAL could not be folded in (%v): its files are moved one by one\n", dst, err)
		}
	}
	for _, suffix := range dbSuffixes {
		cur := dst + suffix
		if _, err := os.Lstat(cur); errors.Is(err, os.ErrNotExist) {
			continue
		}
		to := filepath.Join(kept, filepath.Base(cur))
		if _, err := os.Lstat(to); err == nil {
			return moved, fmt.Errorf("move %s aside: %s exists", cur, to)
		}
		if err := os.Rename(cur, to); err != nil {
			return moved, err
		}
		moved = true
	}
	if moved {
		if err := durable.Sync(kept); err != nil {
			return moved, err
		}
		return moved, durable.Sync(filepath.Dir(dst))
	}
	return false, nil
}

// checkpoint folds the WAL of the database at path into its main file and
// closes it, which removes the WAL when no other connection has it open.
func checkpoint(ctx context.Context, path string) error {
	db, err := openFile(path, false)
	if err != nil {
		return err
	}
	defer db.Close()
	var busy, logged, done int
	if err := db.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logged, &done); err != nil {
		return err
	}
	if busy != 0 {
		return errors.New("the checkpoint was blocked by another connection")
	}
	return db.Close()
}
