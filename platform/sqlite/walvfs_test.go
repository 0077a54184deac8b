package sqlite_test

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/prsaga/prsaga/platform/sqlite"
)

// blobs holds transactions of several sizes: txmeta says how many rows
// each transaction wrote to blob, so a transaction found half applied
// shows.
var blobs = sqlite.Migrations{Component: "walvfs", FS: fstest.MapFS{
	"0001_blob.sql": {Data: []byte(`CREATE TABLE blob (tx INTEGER NOT NULL, n INTEGER NOT NULL, v BLOB NOT NULL, PRIMARY KEY (tx, n));
CREATE TABLE txmeta (tx INTEGER PRIMARY KEY, rows INTEGER NOT NULL);
`)},
}}

// writeTx commits transaction i: rows rows of size bytes each, and its
// txmeta row.
func writeTx(ctx context.Context, db *sqlite.DB, i, rows, size int) error {
	return update(ctx, db, func(tx *sqlite.Tx) error {
		v := []byte(strings.Repeat(strconv.Itoa(i%10), size))
		for n := range rows {
			if _, err := tx.Exec(`INSERT INTO blob (tx, n, v) VALUES (?, ?, ?)`, i, n, v); err != nil {
				return err
			}
		}
		_, err := tx.Exec(`INSERT INTO txmeta (tx, rows) VALUES (?, ?)`, i, rows)
		return err
	})
}

// txSize is the shape of transaction i: one frame (its header and page
// are written apart), a few pages, now and then more than the VFS gathers
// (1 MiB) and more than one write takes (128 KiB).
func txSize(i int) (rows, size int) {
	switch i % 5 {
	case 0:
		return 0, 0 // the txmeta row alone: one page, one frame
	case 1:
		return 30, 3000 // a few dozen frames
	case 2:
		return 400, 3500 // ~1.4 MiB of frames
	default:
		return 5, 500
	}
}

// checkBlobs fails unless db passes SQLite's integrity check, every
// transaction txmeta names is whole, and none is missing below the highest.
func checkBlobs(t *testing.T, db *sqlite.DB) (last int) {
	t.Helper()
	var ok string
	if err := db.Reader().QueryRow(`PRAGMA integrity_check`).Scan(&ok); err != nil || ok != "ok" {
		t.Fatalf("integrity_check: %q, %v", ok, err)
	}
	rows, err := db.Reader().Query(`SELECT m.tx, m.rows, (SELECT count(*) FROM blob b WHERE b.tx = m.tx) FROM txmeta m ORDER BY m.tx`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	last = -1
	for rows.Next() {
		var tx, want, got int
		if err := rows.Scan(&tx, &want, &got); err != nil {
			t.Fatal(err)
		}
		if tx != last+1 {
			t.Errorf("transaction %d missing (next is %d)", last+1, tx)
		}
		if got != want {
			t.Errorf("transaction %d has %d rows, wrote %d", tx, got, want)
		}
		last = tx
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return last
}

func TestWALCommitIsGatheredIntoFewWrites(t *testing.T) {
	ctx := testContext(t)
	db := open(t, filepath.Join(t.TempDir(), "db.sqlite"), sqlite.Options{}, blobs)
	writes0, flushes0 := sqlite.WALCounts()
	if err := writeTx(ctx, db, 0, 60, 3000); err != nil { // ~60 pages: ~120 writes asked
		t.Fatal(err)
	}
	writes, flushes := sqlite.WALCounts()
	writes, flushes = writes-writes0, flushes-flushes0
	if writes < 100 {
		t.Fatalf("SQLite asked %d writes of the WAL through %s for ~60 pages: the store does not use the VFS", writes, sqlite.WALVFS)
	}
	// 60 frames of 4 KiB and their headers are ~250 KiB: two writes of at
	// most 128 KiB, and a few for the pages of the tables' roots.
	if flushes > 6 {
		t.Errorf("%d writes asked became %d writes; want a handful", writes, flushes)
	}
	if last := checkBlobs(t, db); last != 0 {
		t.Errorf("last transaction %d, want 0", last)
	}
}

// Every commit is in the file when it returns: a reader (another
// connection, another file descriptor) sees it at once.
func TestWALReaderSeesEachCommitAtOnce(t *testing.T) {
	ctx := testContext(t)
	db := open(t, filepath.Join(t.TempDir(), "db.sqlite"), sqlite.Options{}, blobs)
	for i := range 120 {
		rows, size := txSize(i)
		if err := writeTx(ctx, db, i, rows, size); err != nil {
			t.Fatalf("transaction %d: %v", i, err)
		}
		var meta, got int
		if err := db.Reader().QueryRow(`SELECT rows, (SELECT count(*) FROM blob WHERE tx = ?) FROM txmeta WHERE tx = ?`, i, i).Scan(&meta, &got); err != nil {
			t.Fatalf("read after transaction %d: %v", i, err)
		}
		if meta != rows || got != rows {
			t.Fatalf("after transaction %d a reader sees %d of its %d rows (txmeta says %d)", i, got, rows, meta)
		}
	}
	checkBlobs(t, db)
}

// A transaction larger than the page cache writes frames before its
// commit, and SQLite rewrites frames it wrote earlier in the same
// transaction and their checksums at the commit: the WAL as it is on disk
// right after the commit, copied away as a crash would leave it, recovers to
// the committed state.
func TestWALSpilledTransactionRecoversFromTheFile(t *testing.T) {
	ctx := testContext(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "db.sqlite")
	db := open(t, path, sqlite.Options{}, blobs)
	if err := writeTx(ctx, db, 0, 1, 10); err != nil {
		t.Fatal(err)
	}
	err := update(ctx, db, func(tx *sqlite.Tx) error {
		if _, err := tx.Exec(`PRAGMA cache_size = 8`); err != nil {
			return err
		}
		v := []byte(strings.Repeat("a", 1500))
		for n := range 300 {
			if _, err := tx.Exec(`INSERT INTO blob (tx, n, v) VALUES (1, ?, ?)`, n, v); err != nil {
				return err
			}
		}
		// The same pages again, after most were spilled.
		if _, err := tx.Exec(`UPDATE blob SET v = ? WHERE tx = 1`, []byte(strings.Repeat("b", 1500))); err != nil {
			return err
		}
		_, err := tx.Exec(`INSERT INTO txmeta (tx, rows) VALUES (1, 300)`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	crashed := filepath.Join(t.TempDir(), "db.sqlite")
	for _, suffix := range []string{"", "-wal"} {
		copyFile(t, path+suffix, crashed+suffix)
	}
	if fi, err := os.Stat(crashed + "-wal"); err != nil || fi.Size() == 0 {
		t.Fatalf("the WAL to recover from: %v, %v", fi, err)
	}
	again := open(t, crashed, sqlite.Options{}, blobs)
	if last := checkBlobs(t, again); last != 1 {
		t.Fatalf("recovered up to transaction %d, want 1", last)
	}
	var bs int
	if err := again.Reader().QueryRow(`SELECT count(*) FROM blob WHERE tx = 1 AND v = ?`, []byte(strings.Repeat("b", 1500))).Scan(&bs); err != nil || bs != 300 {
		t.Fatalf("rows with the update: %d, %v; want 300", bs, err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

const walCrashEnv = "PRSAGA_TEST_WALCRASH_DB"

// A process killed at any moment keeps every transaction whose commit
// returned, and no part of one that did not: the writer runs in a child
// process that reports each commit, and is killed with SIGKILL.
func TestWALKilledWriterKeepsEveryCommit(t *testing.T) {
	if path := os.Getenv(walCrashEnv); path != "" {
		walWriter(t, path) // this process is the child
		return
	}
	path := filepath.Join(t.TempDir(), "db.sqlite")
	reported := -1
	for round := range 6 {
		sync := round%2 == 1 // synchronous=FULL as well as NORMAL
		ctx, cancel := context.WithTimeout(testContext(t), 60*time.Second)
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestWALKilledWriterKeepsEveryCommit$", "-test.count=1")
		cmd.Env = append(os.Environ(), walCrashEnv+"="+path, fmt.Sprintf("PRSAGA_TEST_WALCRASH_SYNC=%t", sync))
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Kill it a few to a few dozen commits in, mid-transaction.
		target := reported + 3 + round*7
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if n, ok := strings.CutPrefix(sc.Text(), "committed "); ok {
				reported, _ = strconv.Atoi(n)
				if reported >= target {
					break
				}
			}
		}
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		go io.Copy(io.Discard, out)
		cmd.Wait()
		cancel()
		if reported < target {
			t.Fatalf("round %d: the child stopped at transaction %d before %d (see its output above)", round, reported, target)
		}
		db, err := sqlite.Open(testContext(t), path, sqlite.Options{Sync: sync}, blobs)
		if err != nil {
			t.Fatalf("round %d: open after the kill: %v", round, err)
		}
		last := checkBlobs(t, db)
		db.Close()
		if last < reported {
			t.Fatalf("round %d: transaction %d's commit returned, the file ends at %d", round, reported, last)
		}
		reported = last
	}
}

// walWriter is the child of TestWALKilledWriterKeepsEveryCommit: it commits
// transactions into path and reports each, until it is killed (or gives up
// after 40 s).
func walWriter(t *testing.T, path string) {
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	db, err := sqlite.Open(ctx, path, sqlite.Options{Sync: os.Getenv("PRSAGA_TEST_WALCRASH_SYNC") == "true"}, blobs)
	if err != nil {
		t.Fatal(err)
	}
	next := 0
	if err := db.Reader().QueryRow(`SELECT coalesce(max(tx), -1) + 1 FROM txmeta`).Scan(&next); err != nil {
		t.Fatal(err)
	}
	for i := next; ctx.Err() == nil; i++ {
		rows, size := txSize(i)
		if err := writeTx(ctx, db, i, rows, size); err != nil {
			t.Fatalf("transaction %d: %v", i, err)
		}
		fmt.Printf("committed %d\n", i)
	}
}

// With synchronous=FULL on a file system that may tear a sector
// (psow=0), SQLite pads each commit to a sector with copies of its commit
// frame and syncs in the middle of the last copy; a reader reads the page
// from the last copy. Each commit is whole in the file when it returns.
func TestWALPaddedCommitIsWholeAtOnce(t *testing.T) {
	dir := t.TempDir()
	open(t, filepath.Join(dir, "registers.sqlite"), sqlite.Options{}) // registers the VFS
	dsn := "file:" + filepath.Join(dir, "padded.sqlite") + "?vfs=" + sqlite.WALVFS +
		"&psow=0&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(10000)"
	w, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.SetMaxOpenConns(1)
	r, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := w.Exec(`CREATE TABLE kv (k INTEGER PRIMARY KEY, v TEXT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	writes0, _ := sqlite.WALCounts()
	for i := range 60 {
		if _, err := w.Exec(`INSERT INTO kv (k, v) VALUES (?, ?)`, i, strings.Repeat("x", 100*(i%7))); err != nil {
			t.Fatalf("insert %d: %v", i, err)
		}
		var n int
		if err := r.QueryRow(`SELECT count(*) FROM kv`).Scan(&n); err != nil {
			t.Fatalf("read after insert %d: %v", i, err)
		}
		if n != i+1 {
			t.Fatalf("after insert %d a reader counts %d rows", i, n)
		}
	}
	if writes, _ := sqlite.WALCounts(); writes-writes0 < 60*4 {
		t.Fatalf("%d WAL writes for 60 padded commits: the VFS or the padding is not in use", writes-writes0)
	}
}

// A transaction that spilled frames and rolled back leaves nothing to be
// written later: another connection commits over the same part of the WAL
// meanwhile, and its commit stays whole when the first connection goes on.
// (SQLite's rollback usually reads a page back, which writes what was
// gathered while the write lock is still held; dbShmLock drops it when
// nothing does.)
func TestWALRolledBackSpillIsDropped(t *testing.T) {
	ctx := testContext(t)
	dir := t.TempDir()
	open(t, filepath.Join(dir, "registers.sqlite"), sqlite.Options{}) // registers the VFS
	path := filepath.Join(dir, "shared.sqlite")
	dsn := "file:" + path + "?vfs=" + sqlite.WALVFS + "&_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)"
	openDB := func() *sql.DB {
		db, err := sql.Open("sqlite", dsn)
		if err != nil {
			t.Fatal(err)
		}
		db.SetMaxOpenConns(1)
		t.Cleanup(func() { db.Close() })
		return db
	}
	a, b := openDB(), openDB()
	if _, err := a.Exec(`CREATE TABLE kv (k INTEGER PRIMARY KEY, v BLOB NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	conn, err := a.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, q := range []string{`PRAGMA cache_size = 8`, `BEGIN IMMEDIATE`} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	for k := 1000; k < 1300; k++ { // pages beyond the cache: frames written before the commit
		if _, err := conn.ExecContext(ctx, `INSERT INTO kv (k, v) VALUES (?, ?)`, k, []byte(strings.Repeat("s", 1500))); err != nil {
			t.Fatal(err)
		}
	}
	// A value of 50 overflow pages: the last statement's spills are pages
	// nothing reads back before the rollback.
	if _, err := conn.ExecContext(ctx, `INSERT INTO kv (k, v) VALUES (5000, ?)`, []byte(strings.Repeat("o", 200_000))); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Exec(`INSERT INTO kv (k, v) VALUES (1, ?)`, []byte(strings.Repeat("b", 3000))); err != nil {
		t.Fatal(err)
	}
	// a goes on: it reads the WAL, then commits after b's frames.
	var n int
	if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM kv`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("a counts %d rows, %v; want b's one", n, err)
	}
	if _, err := conn.ExecContext(ctx, `INSERT INTO kv (k, v) VALUES (2, ?)`, []byte(strings.Repeat("a", 3000))); err != nil {
		t.Fatal(err)
	}
	crashed := filepath.Join(t.TempDir(), "shared.sqlite")
	for _, suffix := range []string{"", "-wal"} {
		copyFile(t, path+suffix, crashed+suffix)
	}
	for _, p := range []string{path, crashed} {
		c, err := sql.Open("sqlite", "file:"+p+"?_pragma=busy_timeout(10000)")
		if err != nil {
			t.Fatal(err)
		}
		var ok string
		var ks string
		if err := c.QueryRow(`PRAGMA integrity_check`).Scan(&ok); err != nil || ok != "ok" {
			t.Fatalf("%s: integrity_check %q, %v", p, ok, err)
		}
		if err := c.QueryRow(`SELECT group_concat(k || ':' || substr(v, 1, 1) || length(v)) FROM kv`).Scan(&ks); err != nil || ks != "1:b3000,2:a3000" {
			t.Fatalf("%s: rows %q, %v; want b's and a's", p, ks, err)
		}
		c.Close()
	}
}
