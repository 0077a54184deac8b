package sqlite_test

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prsaga/prsaga/platform/logging/logtest"
	"github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/platform/store"
)

// pragma reads one integer pragma through the reader pool.
func pragma(t *testing.T, db *sqlite.DB, name string) int64 {
	t.Helper()
	var n int64
	if err := db.Reader().QueryRowContext(testContext(t), `PRAGMA `+name).Scan(&n); err != nil {
		t.Fatalf("PRAGMA %s: %v", name, err)
	}
	return n
}

// fillInbox marks n events processed, in transactions of 500; the ids are
// long so that a few thousand rows take a few megabytes.
func fillInbox(t *testing.T, db *sqlite.DB, from, n int) {
	t.Helper()
	pad := strings.Repeat("x", 400)
	for i := from; i < from+n; i += 500 {
		if err := db.Update(testContext(t), func(tx store.Tx) error {
			for j := i; j < min(i+500, from+n); j++ {
				if _, err := tx.MarkProcessed("validator", fmt.Sprintf("%s-%08d", pad, j)); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
}

func pruneAll(t *testing.T, db *sqlite.DB) {
	t.Helper()
	for {
		n, err := db.PruneInbox(testContext(t), 0, 5000)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
	}
}

func fileBytes(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func TestNewFileIsIncrementalAutoVacuum(t *testing.T) {
	log, logs := logtest.New()
	db := open(t, filepath.Join(t.TempDir(), "db.sqlite"), sqlite.Options{Log: log}, kv)
	if got := pragma(t, db, "auto_vacuum"); got != 2 {
		t.Errorf("auto_vacuum of a new file: got %d, want 2 (INCREMENTAL)", got)
	}
	// Made so from its first page: no conversion, which is for old files.
	if strings.Contains(logs.String(), "converted") {
		t.Errorf("a new file was converted by a VACUUM: %s", logs.String())
	}
	// The WAL is cut back after a checkpoint instead of keeping its
	// high-water mark.
	if got := pragma(t, db, "journal_size_limit"); got != 16<<20 {
		t.Errorf("journal_size_limit: got %d, want %d", got, 16<<20)
	}
}

// The writer checkpoints the WAL every 4,000 pages, not SQLite's 1,000:
// writing ~45 MB in transactions of 500 rows, the WAL grows past 1,000
// frames (4 MiB) and is started over near 4,000 (16 MiB), never much past.
func TestWALCheckpointsEvery4000Pages(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db.sqlite")
	db := open(t, path, sqlite.Options{})
	var peak int64
	for i := 0; i < 24; i++ {
		fillInbox(t, db, i*2000, 2000)
		peak = max(peak, fileBytes(t, path+"-wal"))
	}
	const frame = 4096 + 24
	if peak < 2000*frame || peak > 4500*frame {
		t.Fatalf("WAL peaked at %d bytes (%d frames); want between 2,000 and 4,500 frames (a checkpoint every 4,000)", peak, peak/frame)
	}
}

// A file filled and then pruned gives its pages back in Vacuum, and
// fill/prune/vacuum cycles leave it no bigger than after the first.
func TestVacuumReturnsPrunedPages(t *testing.T) {
	c := newClock()
	path := filepath.Join(t.TempDir(), "db.sqlite")
	db := open(t, path, sqlite.Options{Now: c.Now})
	var first int64
	for cycle := 0; cycle < 3; cycle++ {
		fillInbox(t, db, cycle*4000, 4000)
		c.Advance(time.Second)
		pruneAll(t, db)
		free, total := pragma(t, db, "freelist_count"), pragma(t, db, "page_count")
		if free < total/2 {
			t.Fatalf("cycle %d: %d of %d pages free after pruning every row; want most", cycle, free, total)
		}
		pages, err := db.Vacuum(testContext(t))
		if err != nil {
			t.Fatal(err)
		}
		after, totalAfter := pragma(t, db, "freelist_count"), pragma(t, db, "page_count")
		if pages <= 0 || after >= free || after > totalAfter/10+1 {
			t.Fatalf("cycle %d: Vacuum returned %d pages, free pages %d → %d of %d; want at most a tenth left free", cycle, pages, free, after, totalAfter)
		}
		size := fileBytes(t, path)
		if size >= total*4096 {
			t.Errorf("cycle %d: file %d bytes after vacuum, want less than the %d of %d pages before", cycle, size, total*4096, total)
		}
		if cycle == 0 {
			first = size
		} else if size > first {
			t.Errorf("cycle %d: file %d bytes after vacuum, grew from %d after the first cycle", cycle, size, first)
		}
	}
	if n, err := db.Vacuum(testContext(t)); err != nil || n != 0 {
		t.Errorf("second Vacuum with nothing pruned: %d pages, %v; want 0, nil", n, err)
	}
}

// A file made without auto-vacuum (every version before issue 17) is
// converted at open by one VACUUM, with its rows intact.
func TestOpenConvertsFileWithoutAutoVacuum(t *testing.T) {
	c := newClock()
	path := filepath.Join(t.TempDir(), "db.sqlite")
	db, err := sqlite.Open(testContext(t), path, sqlite.Options{Now: c.Now}, kv)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	// Make it what an old version left: auto_vacuum NONE, in WAL mode, rows.
	raw, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	raw.SetMaxOpenConns(1)
	for _, q := range []string{`PRAGMA auto_vacuum=NONE`, `VACUUM`} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var mode int
	if err := raw.QueryRow(`PRAGMA auto_vacuum`).Scan(&mode); err != nil || mode != 0 {
		t.Fatalf("fixture auto_vacuum = %d (%v), want 0", mode, err)
	}
	if _, err := raw.Exec(`INSERT INTO kv (k, v) VALUES ('a', 1), ('b', 2)`); err != nil {
		t.Fatal(err)
	}
	if err := raw.Close(); err != nil {
		t.Fatal(err)
	}
	old := open(t, path, sqlite.Options{Now: c.Now}, kv)
	fillInbox(t, old, 0, 2000)
	old.Close()

	db = open(t, path, sqlite.Options{Now: c.Now}, kv)
	if got := pragma(t, db, "auto_vacuum"); got != 2 {
		t.Fatalf("auto_vacuum after opening an old file: got %d, want 2 (INCREMENTAL)", got)
	}
	if v, ok := get(t, db, "a"); !ok || v != 1 {
		t.Errorf("kv a after conversion: %d, %v; want 1", v, ok)
	}
	if v, ok := get(t, db, "b"); !ok || v != 2 {
		t.Errorf("kv b after conversion: %d, %v; want 2", v, ok)
	}
	var rows int
	var check string
	if err := db.Reader().QueryRow(`SELECT count(*) FROM inbox`).Scan(&rows); err != nil || rows != 2000 {
		t.Errorf("inbox rows after conversion: %d (%v), want 2000", rows, err)
	}
	if err := db.Reader().QueryRow(`PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
		t.Errorf("integrity_check after conversion: %q (%v), want ok", check, err)
	}
	// And the converted file gives pruned pages back.
	c.Advance(time.Second)
	pruneAll(t, db)
	free := pragma(t, db, "freelist_count")
	if _, err := db.Vacuum(testContext(t)); err != nil {
		t.Fatal(err)
	}
	if after := pragma(t, db, "freelist_count"); after >= free {
		t.Errorf("free pages after Vacuum on the converted file: %d, before %d; want fewer", after, free)
	}
}
