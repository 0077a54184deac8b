package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/prsaga/prsaga/platform/store"
	"github.com/prsaga/prsaga/platform/store/storetest"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/platform/sqlite/sqlitetest"
)

// clock is a settable store clock, safe for concurrent use.
type clock struct{ ns atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ns.Store(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC).UnixNano())
	return c
}

func (c *clock) Now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

var (
	testContext = storetest.Context
	requested   = storetest.Requested
)

func emit(t *testing.T, db *sqlite.DB, evs ...*event.Event) { storetest.Emit(t, db, evs...) }

func unsentIDs(t *testing.T, db *sqlite.DB, limit int) []string {
	return storetest.UnsentIDs(t, db, limit)
}

// kv is a component table the tests write through Update.
var kv = sqlite.Migrations{Component: "test", FS: fstest.MapFS{
	"0001_kv.sql": {Data: []byte("CREATE TABLE kv (k TEXT PRIMARY KEY, v INTEGER NOT NULL);\n")},
}}

func open(t *testing.T, path string, opts sqlite.Options, migs ...sqlite.Migrations) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(testContext(t), path, opts, migs...)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func openClock(t *testing.T) (*sqlite.DB, *clock) {
	t.Helper()
	c := newClock()
	return open(t, filepath.Join(t.TempDir(), "db.sqlite"), sqlite.Options{Now: c.Now}, kv), c
}

// insertKV is a unit that inserts k=v into kv.
func insertKV(k string, v int) func(store.Tx) error {
	return func(stx store.Tx) error {
		_, err := stx.(*sqlite.Tx).Exec(`INSERT INTO kv (k, v) VALUES (?, ?)`, k, v)
		return err
	}
}

// update runs fn in db.Update on the concrete transaction these tests
// reach into.
func update(ctx context.Context, db *sqlite.DB, fn func(tx *sqlite.Tx) error) error {
	return db.Update(ctx, func(stx store.Tx) error { return fn(stx.(*sqlite.Tx)) })
}

// putKV commits k=v in a transaction of its own; when says at which point
// of the test, for the failure.
func putKV(t *testing.T, db *sqlite.DB, k string, v int, when string) {
	t.Helper()
	if err := db.Update(testContext(t), insertKV(k, v)); err != nil {
		t.Fatalf("update %s: %v", when, err)
	}
}

// mustPanic runs f and fails the test unless f's panic reaches it; what
// names the panic.
func mustPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s did not propagate", what)
		}
	}()
	f()
}

func get(t *testing.T, db *sqlite.DB, k string) (int, bool) {
	t.Helper()
	var v int
	err := db.Reader().QueryRow(`SELECT v FROM kv WHERE k = ?`, k).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false
	}
	if err != nil {
		t.Fatalf("read kv %s: %v", k, err)
	}
	return v, true
}

func TestMigrationsApplyOnce(t *testing.T) {
	ctx := testContext(t)
	path := filepath.Join(t.TempDir(), "sub", "db.sqlite") // the dir is created
	migs := sqlite.Migrations{Component: "widgets", FS: fstest.MapFS{
		// Not idempotent on purpose: a second run would fail or add a row.
		"0001_t.sql": {Data: []byte("CREATE TABLE t (x INTEGER NOT NULL);\nINSERT INTO t VALUES (1);\n")},
		"0002_t.sql": {Data: []byte("INSERT INTO t SELECT max(x) + 1 FROM t;\n")},
	}}
	for i := 0; i < 2; i++ {
		db, err := sqlite.Open(ctx, path, sqlite.Options{}, migs)
		if err != nil {
			t.Fatalf("open %d: %v", i+1, err)
		}
		var n, max int
		if err := db.Reader().QueryRow(`SELECT count(*), max(x) FROM t`).Scan(&n, &max); err != nil {
			t.Fatal(err)
		}
		if n != 2 || max != 2 {
			t.Errorf("open %d: table t has %d rows, max %d; want 2 rows, max 2 (each migration once, in name order)", i+1, n, max)
		}
		var applied int
		if err := db.Reader().QueryRow(`SELECT count(*) FROM schema_migrations`).Scan(&applied); err != nil {
			t.Fatal(err)
		}
		if applied != 5 {
			t.Errorf("open %d: schema_migrations has %d rows, want 5 (platform 0001-0003, widgets 0001-0002)", i+1, applied)
		}
		if err := db.Close(); err != nil {
			t.Fatalf("close: %v", err)
		}
		if err := db.Close(); err != nil {
			t.Errorf("second close: %v", err)
		}
	}
}

func TestFailedMigrationRollsBack(t *testing.T) {
	ctx := testContext(t)
	path := filepath.Join(t.TempDir(), "db.sqlite")
	bad := sqlite.Migrations{Component: "widgets", FS: fstest.MapFS{
		"0001_bad.sql": {Data: []byte("CREATE TABLE v (x INTEGER);\nTHIS IS NOT SQL;\n")},
	}}
	if db, err := sqlite.Open(ctx, path, sqlite.Options{}, bad); err == nil {
		db.Close()
		t.Fatal("open with a broken migration: got nil error")
	} else if !strings.Contains(err.Error(), "widgets/0001_bad.sql") {
		t.Errorf("error %q does not name the migration", err)
	}
	db := open(t, path, sqlite.Options{})
	var n int
	if err := db.Reader().QueryRow(`SELECT count(*) FROM sqlite_master WHERE name = 'v'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Error("table v of the failed migration exists; want the migration rolled back whole")
	}
}

func TestPragmas(t *testing.T) {
	for _, tt := range []struct {
		sync bool
		want int // PRAGMA synchronous: 1 NORMAL, 2 FULL
	}{{false, 1}, {true, 2}} {
		t.Run(fmt.Sprintf("sync=%v", tt.sync), func(t *testing.T) {
			ctx := testContext(t)
			db := open(t, filepath.Join(t.TempDir(), "db.sqlite"), sqlite.Options{Sync: tt.sync})
			var mode string
			if err := db.Reader().QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
				t.Fatal(err)
			}
			if mode != "wal" {
				t.Errorf("journal_mode: got %q, want wal", mode)
			}
			var rsync int
			if err := db.Reader().QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&rsync); err != nil {
				t.Fatal(err)
			}
			if rsync != tt.want {
				t.Errorf("reader synchronous: got %d, want %d", rsync, tt.want)
			}
			var wsync, fk, busy int
			err := update(ctx, db, func(tx *sqlite.Tx) error {
				if err := tx.QueryRow(`PRAGMA synchronous`).Scan(&wsync); err != nil {
					return err
				}
				if err := tx.QueryRow(`PRAGMA foreign_keys`).Scan(&fk); err != nil {
					return err
				}
				return tx.QueryRow(`PRAGMA busy_timeout`).Scan(&busy)
			})
			if err != nil {
				t.Fatal(err)
			}
			if wsync != tt.want || fk != 1 || busy <= 0 {
				t.Errorf("writer: synchronous=%d foreign_keys=%d busy_timeout=%d, want %d, 1, >0", wsync, fk, busy, tt.want)
			}
			if _, err := db.Reader().ExecContext(ctx, `INSERT INTO inbox (consumer, event_id, processed_at) VALUES ('c', 'e', 0)`); err == nil {
				t.Error("a write through Reader() succeeded; want the reader pool query-only")
			}
		})
	}
}

func TestUpdateCommitsOrRollsBack(t *testing.T) {
	ctx := testContext(t)
	db, clk := openClock(t)
	err := update(ctx, db, func(tx *sqlite.Tx) error {
		if !tx.Now().Equal(clk.Now()) {
			t.Errorf("tx.Now: got %v, want the store clock %v", tx.Now(), clk.Now())
		}
		if tx.Context() != ctx {
			t.Error("tx.Context is not the context Update was given")
		}
		_, err := tx.Exec(`INSERT INTO kv (k, v) VALUES ('a', 1)`)
		return err
	})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if v, ok := get(t, db, "a"); !ok || v != 1 {
		t.Errorf("after commit: a=%d (present %v), want 1", v, ok)
	}

	errNo := errors.New("decided against it")
	err = update(ctx, db, func(tx *sqlite.Tx) error {
		if _, err := tx.Exec(`INSERT INTO kv (k, v) VALUES ('b', 2)`); err != nil {
			return err
		}
		if _, err := tx.Exec(`UPDATE kv SET v = 10 WHERE k = 'a'`); err != nil {
			return err
		}
		return errNo
	})
	if !errors.Is(err, errNo) {
		t.Fatalf("update: got error %v, want the closure's error", err)
	}
	if _, ok := get(t, db, "b"); ok {
		t.Error("row b exists after the closure failed; want it rolled back")
	}
	if v, _ := get(t, db, "a"); v != 1 {
		t.Errorf("a=%d after the closure failed, want 1", v)
	}
	// The single writer connection is free again.
	putKV(t, db, "c", 3, "after a rollback")
}

func TestMarkProcessed(t *testing.T) {
	ctx := testContext(t)
	db, _ := openClock(t)
	err := update(ctx, db, func(tx *sqlite.Tx) error {
		first, err := tx.MarkProcessed("validator", "e-1")
		if err != nil || !first {
			t.Errorf("first MarkProcessed: got first=%v err=%v, want true, nil", first, err)
		}
		first, err = tx.MarkProcessed("validator", "e-1")
		if err != nil || first {
			t.Errorf("repeat MarkProcessed: got first=%v err=%v, want false, nil", first, err)
		}
		first, err = tx.MarkProcessed("ledger", "e-1")
		if err != nil || !first {
			t.Errorf("MarkProcessed by another consumer: got first=%v err=%v, want true, nil", first, err)
		}
		// The transaction is still usable after the duplicate.
		_, err = tx.Exec(`INSERT INTO kv (k, v) VALUES ('after', 1)`)
		return err
	})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if _, ok := get(t, db, "after"); !ok {
		t.Error("the write after a duplicate MarkProcessed was not committed")
	}
	for _, tt := range []struct {
		consumer, id string
		want         bool
	}{{"validator", "e-1", true}, {"ledger", "e-1", true}, {"merger", "e-1", false}, {"validator", "e-2", false}} {
		got, err := db.Processed(ctx, tt.consumer, tt.id)
		if err != nil || got != tt.want {
			t.Errorf("Processed(%s, %s): got %v, %v; want %v", tt.consumer, tt.id, got, err, tt.want)
		}
	}
	// In a later transaction too.
	err = update(ctx, db, func(tx *sqlite.Tx) error {
		first, err := tx.MarkProcessed("validator", "e-1")
		if err != nil || first {
			t.Errorf("MarkProcessed in a later tx: got first=%v err=%v, want false, nil", first, err)
		}
		_, err = tx.Exec(`INSERT INTO kv (k, v) VALUES ('later', 1)`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := get(t, db, "later"); !ok {
		t.Error("the write after a duplicate MarkProcessed in a later tx was not committed")
	}
}

func TestConcurrentUpdates(t *testing.T) {
	ctx := testContext(t)
	path := filepath.Join(t.TempDir(), "db.sqlite")
	// Two handles on one file, as two processes (or a service and the CLI)
	// would have: the single-connection writer does not serialise them.
	dbs := []*sqlite.DB{open(t, path, sqlite.Options{}, kv), open(t, path, sqlite.Options{}, kv)}
	putKV(t, dbs[0], "n", 0, "of n")
	const workers, increments = 8, 50
	var wg sync.WaitGroup
	errs := make(chan error, workers*increments)
	for w := 0; w < workers; w++ {
		db := dbs[w%len(dbs)]
		wg.Go(func() {
			for i := 0; i < increments; i++ {
				err := update(ctx, db, func(tx *sqlite.Tx) error {
					var n int
					if err := tx.QueryRow(`SELECT v FROM kv WHERE k = 'n'`).Scan(&n); err != nil {
						return err
					}
					_, err := tx.Exec(`UPDATE kv SET v = ? WHERE k = 'n'`, n+1)
					return err
				})
				if err != nil {
					errs <- err
				}
				if _, _, err := db.OutboxStats(ctx); err != nil { // readers alongside
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent update: %v", err)
	}
	if v, _ := get(t, dbs[1], "n"); v != workers*increments {
		t.Errorf("counter: got %d, want %d", v, workers*increments)
	}
}

func TestSqlitetestOpen(t *testing.T) {
	db := sqlitetest.Open(t, kv)
	putKV(t, db, "a", 1, "on a sqlitetest database")
}

func TestUpdateSurvivesPanickingClosure(t *testing.T) {
	// net/http recovers a handler's panic; the store must not stay wedged
	// on its single writer connection afterwards.
	ctx := testContext(t)
	db, _ := openClock(t)
	mustPanic(t, "the closure's panic", func() {
		_ = db.Update(ctx, func(stx store.Tx) error {
			if err := insertKV("p", 1)(stx); err != nil {
				return err
			}
			panic("handler bug")
		})
	})
	short, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := db.Update(short, insertKV("q", 1)); err != nil {
		t.Fatalf("update after a panicking closure: %v", err)
	}
	if _, ok := get(t, db, "p"); ok {
		t.Error("the panicking transaction's write was committed")
	}
}

func TestReaderTransaction(t *testing.T) {
	// A consistent multi-query read (a listing and its count) runs in a
	// transaction on the reader pool, also while a write is in progress.
	ctx := testContext(t)
	db, _ := openClock(t)
	err := update(ctx, db, func(tx *sqlite.Tx) error {
		if _, err := tx.Exec(`INSERT INTO kv (k, v) VALUES ('a', 1)`); err != nil {
			return err
		}
		rtx, err := db.Reader().BeginTx(ctx, nil)
		if err != nil {
			t.Fatalf("begin a read transaction on Reader(): %v", err)
		}
		defer rtx.Rollback()
		var n int
		if err := rtx.QueryRow(`SELECT count(*) FROM kv`).Scan(&n); err != nil {
			t.Fatalf("read in the transaction: %v", err)
		}
		if n != 0 {
			t.Errorf("reader sees %d uncommitted rows, want 0", n)
		}
		if _, err := rtx.Exec(`INSERT INTO kv (k, v) VALUES ('b', 2)`); err == nil {
			t.Error("a write in a Reader() transaction succeeded; want query-only")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestReaderOpenWritesNothing(t *testing.T) {
	// The reader pool opens connections as reads overlap, mid-traffic. An
	// open that wrote (a pragma setting the file's header: auto_vacuum)
	// would commit a page, and the writer, seeing the file changed by
	// another connection, would drop its whole page cache at its next
	// transaction and read it all back.
	ctx := testContext(t)
	db, _ := openClock(t)
	putKV(t, db, "a", 1, "before the readers")
	version := func() (v int64) {
		t.Helper()
		if err := update(ctx, db, func(tx *sqlite.Tx) error {
			return tx.QueryRow(`PRAGMA data_version`).Scan(&v)
		}); err != nil {
			t.Fatal(err)
		}
		return v
	}
	before := version()
	// Four at once: the pool opens every connection it may hold.
	var conns []*sql.Conn
	for range 4 {
		c, err := db.Reader().Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		var n int
		if err := c.QueryRowContext(ctx, `SELECT count(*) FROM kv`).Scan(&n); err != nil || n != 1 {
			t.Fatalf("read on reader %d: n=%d err=%v", len(conns), n, err)
		}
	}
	for _, c := range conns {
		c.Close()
	}
	if after := version(); after != before {
		t.Errorf("the writer's data_version went %d -> %d while only readers opened: a reader's open wrote to the file", before, after)
	}
}
