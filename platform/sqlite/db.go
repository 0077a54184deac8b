// Package sqlite is the embedded store: one SQLite file per service (modernc,
// pure Go) in WAL mode, holding the platform's outbox and inbox tables and
// the service's own tables, with migrations embedded per component.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // registers driver "sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

//go:embed migrations/*.sql
var platformMigrations embed.FS

// Migrations is one component's schema: SQL files named NNNN_what.sql,
// applied in name order, each once, recorded under Component.
type Migrations struct {
	Component string
	FS        fs.FS
}

// EmbeddedMigrations is component's Migrations in the directory dir of
// files, a file system embedded at build time (//go:embed dir/*.sql): what
// every adapter declares as its Migrations. A dir that is not a valid path
// is a programming error, seen at start: it panics.
func EmbeddedMigrations(component string, files fs.FS, dir string) Migrations {
	sub, err := fs.Sub(files, dir)
	if err != nil {
		panic(fmt.Sprintf("sqlite: migrations of %s: %v", component, err))
	}
	return Migrations{Component: component, FS: sub}
}

// Options of a database.
type Options struct {
	// Sync selects synchronous=FULL (survives power loss) over NORMAL.
	Sync bool
	// Now is the clock; defaults to time.Now.
	Now func() time.Time
	// Log receives the one-time conversion to incremental auto-vacuum
	// (vacuum.go); nil: discarded.
	Log *slog.Logger
}

// DB is one service's database. Writes are serialised through one
// connection (SQLite has one writer); reads use a separate pool. Safe for
// concurrent use.
type DB struct {
	path      string
	w, r      *sql.DB
	now       func() time.Time
	log       *slog.Logger
	committed chan struct{}
	group     group // the writers' group commit
	// savepointsNext counts down the transactions that run with a
	// savepoint per unit from the start (commitGroup); the group's leader
	// alone touches it.
	savepointsNext int
	fresh          fresh      // rows committed since the relay last took them
	marks          marks      // rows published, to be marked sent by the next commit
	wr             writer     // the write connection's statements (writer.go)
	rstmts         stmtCache  // on r, for QueryContext and QueryRowContext
	reads          readStmts  // on r
	mu             sync.Mutex // guards closed
	closed         bool
}

// Open opens (creating if needed) the database file at path and applies the
// platform's and the given components' migrations.
func Open(ctx context.Context, path string, opts Options, migs ...Migrations) (*DB, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	sync := "NORMAL"
	if opts.Sync {
		sync = "FULL"
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	// Before journal_mode: switching a new file to WAL writes its first
	// page, after which auto_vacuum can only change by a VACUUM
	// (ensureIncremental's conversion, meant for files made before it). On
	// an existing file it changes no setting but still writes: the header
	// field, in a transaction of its own. So only the writer sets it (see
	// the readers' pragmas below).
	q.Add("_pragma", "auto_vacuum(INCREMENTAL)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous("+sync+")")
	q.Add("_pragma", "foreign_keys(1)")
	// The undo data of a batch's savepoints otherwise spills to a temp file,
	// a pwrite per page (~30% of a batched ledger commit). Only rollback
	// within a transaction uses it; crash recovery is the WAL's.
	q.Add("_pragma", "temp_store(MEMORY)")
	// A checkpoint copies each page the WAL holds into the file once,
	// however many commits wrote it. Every 4,000 pages (16 MiB) instead of
	// SQLite's 1,000, the pages commits write again and again (B-tree
	// interiors, the right edges of time-ordered keys, a hot saga's leaf)
	// are copied a quarter as often: in W2 at 10,000 sagas, when the
	// ledger's tables have outgrown its page cache, 7% fewer read+write
	// system calls and 5% less CPU per saga (medians of six runs;
	// docs/performance-history.md, round fourteen). The price: a checkpoint
	// runs four times as long in the committing connection, and commits
	// queued behind it wait (W1's p99 rose by a tenth or more).
	q.Add("_pragma", "wal_autocheckpoint(4000)")
	// A checkpoint that empties the WAL leaves the file at its high-water
	// mark (a long read or a big transaction can make it large); the next
	// write cuts it back to this (normal traffic stays under it: 4,000
	// frames of 4 KiB and their headers).
	q.Add("_pragma", "journal_size_limit(16777216)")
	q.Set("_txlock", "immediate")
	// WAL frames gathered into one write per commit (walvfs.go).
	if err := registerWALVFS(); err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	q.Set("vfs", walVFS)
	dsn := "file:" + path + "?" + q.Encode()
	w, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetConnMaxIdleTime(0)
	// Readers open as reads overlap, mid-traffic. Setting auto_vacuum would
	// commit page 1, and the writer, seeing the file changed by another
	// connection, would drop its whole page cache at its next transaction
	// (and the opening reader would run a checkpoint): a reader's open
	// writes nothing. The writer's open (first, in Open) made the file.
	q["_pragma"] = slices.DeleteFunc(q["_pragma"], func(p string) bool { return strings.HasPrefix(p, "auto_vacuum(") })
	q.Add("_pragma", "query_only(1)")
	// BEGIN IMMEDIATE fails on a query-only connection ("attempt to write a
	// readonly database"): a read transaction on the reader pool is deferred.
	q.Set("_txlock", "deferred")
	r, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	r.SetMaxOpenConns(4)
	// Keep every reader open: database/sql's default keeps two idle, so a
	// burst of four readers would close two connections and open (and
	// configure, and prepare statements on) new ones afterwards.
	r.SetMaxIdleConns(4)
	db := &DB{path: path, w: w, r: r, now: opts.Now, log: opts.Log, committed: make(chan struct{}, 1),
		rstmts: stmtCache{stmts: map[string]*sql.Stmt{}}}
	if db.now == nil {
		db.now = time.Now
	}
	if db.log == nil {
		db.log = slog.New(slog.DiscardHandler)
	}
	if err := db.ensureIncremental(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	sub, _ := fs.Sub(platformMigrations, "migrations")
	all := append([]Migrations{{Component: "platform", FS: sub}}, migs...)
	if err := db.migrate(ctx, all); err != nil {
		db.Close()
		return nil, err
	}
	if err := db.prepare(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// Close closes both pools.
func (db *DB) Close() error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closed {
		return nil
	}
	db.closed = true
	// The writer's statements are closed on their connection, once it is
	// free (a transaction still running ends first).
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	db.withWriter(ctx, func() error { db.wr.close(); return nil })
	db.rstmts.close()
	db.reads.close()
	return errors.Join(db.w.Close(), db.r.Close())
}

// Now is the store's clock.
func (db *DB) Now() time.Time { return db.now() }

// Reader is the read-only pool, for queries outside transactions.
func (db *DB) Reader() *sql.DB { return db.r }

// Committed is signalled (without blocking) after every transaction that
// appended to the outbox: the relay's wake-up.
func (db *DB) Committed() <-chan struct{} { return db.committed }

func (db *DB) migrate(ctx context.Context, all []Migrations) error {
	if _, err := db.w.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		component TEXT NOT NULL, name TEXT NOT NULL, applied_at INTEGER NOT NULL,
		PRIMARY KEY (component, name))`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	for _, m := range all {
		names, err := fs.Glob(m.FS, "*.sql")
		if err != nil {
			return fmt.Errorf("migrate %s: %w", m.Component, err)
		}
		for _, name := range names { // fs.Glob returns names sorted
			if err := db.apply(ctx, m, name); err != nil {
				return fmt.Errorf("migrate %s/%s: %w", m.Component, name, err)
			}
		}
	}
	return nil
}

func (db *DB) apply(ctx context.Context, m Migrations, name string) error {
	body, err := fs.ReadFile(m.FS, name)
	if err != nil {
		return err
	}
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE component=? AND name=?`, m.Component, name).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	for _, stmt := range strings.Split(string(body), ";\n") {
		if strings.TrimSpace(stmt) == "" {
			continue
		}
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (component, name, applied_at) VALUES (?, ?, ?)`, m.Component, name, db.now().UnixMilli()); err != nil {
		return err
	}
	return tx.Commit()
}

// isBusy reports SQLite lock contention that survived the busy timeout.
func isBusy(err error) bool {
	var e interface{ Code() int }
	if errors.As(err, &e) {
		c := e.Code() & 0xff
		return c == sqlite3.SQLITE_BUSY || c == sqlite3.SQLITE_LOCKED
	}
	return false
}
