package ydb

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/ydb-platform/ydb-go-sdk/v3"
	"github.com/ydb-platform/ydb-go-sdk/v3/query"
	"github.com/ydb-platform/ydb-go-sdk/v3/sugar"

	"github.com/prsaga/prsaga/platform/store"
)

//go:embed migrations/*.yql
var platformFiles embed.FS

// PlatformMigrations are the outbox and inbox, applied by Open before the
// service's own migrations.
var PlatformMigrations = EmbeddedMigrations("platform", platformFiles, "migrations")

// Options of one service's database.
type Options struct {
	// Prefix is the directory of the service's tables, relative to the
	// database: e.g. "prsaga/ledger". Letters, digits, '_', '-', '.' and
	// '/' between names.
	Prefix string
	// Now is the clock; defaults to time.Now.
	Now func() time.Time
}

// DB is one service's directory of the database: its tables, outbox and
// inbox. It implements store.DB. Safe for concurrent use.
type DB struct {
	conn      *Conn
	dir       string // absolute: <database>/<prefix>
	pragma    string // PRAGMA TablePathPrefix line, prepended to every statement
	now       func() time.Time
	committed chan struct{}
}

var _ store.DB = (*DB)(nil)

var (
	prefixRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$`)
	dirRE    = regexp.MustCompile(`^(/[A-Za-z0-9_.-]+)+$`)
)

// Open opens (creating if needed) the directory opts.Prefix and applies the
// platform's migrations and then migs, each once. DDL runs outside
// transactions.
func Open(ctx context.Context, c *Conn, opts Options, migs ...Migrations) (*DB, error) {
	if !prefixRE.MatchString(opts.Prefix) || containsDotDot(opts.Prefix) {
		return nil, fmt.Errorf("ydb: table prefix %q is not a relative path of plain names", opts.Prefix)
	}
	db := &DB{conn: c, dir: path.Join(c.Database(), opts.Prefix), now: opts.Now, committed: make(chan struct{}, 1)}
	if !dirRE.MatchString(db.dir) || containsDotDot(db.dir[1:]) {
		return nil, fmt.Errorf("ydb: table directory %q is not an absolute path of plain names", db.dir)
	}
	if db.now == nil {
		db.now = time.Now
	}
	// The prefix is checked above and the database name comes from the
	// driver: nothing in this line comes from a request.
	db.pragma = fmt.Sprintf("PRAGMA TablePathPrefix(%q);\n", db.dir)
	if err := sugar.MakeRecursive(ctx, c.drv, opts.Prefix); err != nil {
		return nil, fmt.Errorf("ydb: create directory %s: %w", db.dir, err)
	}
	if err := db.migrate(ctx, append([]Migrations{PlatformMigrations}, migs...)); err != nil {
		return nil, err
	}
	return db, nil
}

func containsDotDot(p string) bool {
	for _, part := range strings.Split(p, "/") {
		if part == "." || part == ".." {
			return true
		}
	}
	return false
}

// Dir is the absolute path of the service's directory.
func (db *DB) Dir() string { return db.dir }

// Now is the store's clock.
func (db *DB) Now() time.Time { return db.now() }

// Committed is signalled after a transaction of this process that emitted
// events has committed.
func (db *DB) Committed() <-chan struct{} { return db.committed }

// Close releases nothing of its own: the connection is shared and
// Conn.Close closes it. Safe to call more than once.
func (db *DB) Close() error { return nil }

// Drop removes the service's directory with every table in it: for tests,
// which open a directory of their own and drop it afterwards.
func (db *DB) Drop(ctx context.Context) error {
	if err := sugar.RemoveRecursive(ctx, db.conn.drv, db.dir); err != nil {
		return fmt.Errorf("ydb: drop %s: %w", db.dir, err)
	}
	return nil
}

// yql prepends the table-path prefix to a statement.
func (db *DB) yql(q string) string { return db.pragma + q }

func execOpts(params ydb.Params, extra ...query.ExecuteOption) []query.ExecuteOption {
	if params != nil {
		extra = append(extra, query.WithParameters(params))
	}
	return extra
}

// readOnly is the transaction control of reads outside a write
// transaction: a consistent snapshot, no locks taken.
func readOnly() query.ExecuteOption {
	return query.WithTxControl(query.SnapshotReadOnlyTxControl())
}

// QueryRow runs a read outside any write transaction (a snapshot) and
// returns its one row; query.ErrNoRows when there is none. q is relative
// to the service's directory.
func (db *DB) QueryRow(ctx context.Context, q string, params ydb.Params) (query.Row, error) {
	return db.conn.drv.Query().QueryRow(ctx, db.yql(q), execOpts(params, readOnly(), query.WithIdempotent())...)
}

// Query runs a read outside any write transaction (a snapshot) and calls
// each for every row of its one result set (materialised: bound what it
// returns).
func (db *DB) Query(ctx context.Context, q string, params ydb.Params, each func(query.Row) error) error {
	rs, err := db.conn.drv.Query().QueryResultSet(ctx, db.yql(q), execOpts(params, readOnly(), query.WithIdempotent())...)
	if err != nil {
		return err
	}
	defer rs.Close(ctx)
	return eachRow(ctx, rs, each)
}

// Stale is a statement that reads an ASYNC index. Such an index is
// written after the commit, outside the transaction, and the server lets
// only a stale read-only transaction read it: declared of this type, a
// statement can be run by QueryStale alone (Query, QueryRow and the
// transaction's methods take a string), and ydbcheck refuses a statement
// that reads an ASYNC index without it.
type Stale string

// QueryStale runs a read in a stale read-only transaction (it may miss
// writes committed a moment ago: for background and aggregate readers
// only, design §5) and calls each for every row of its one result set.
func (db *DB) QueryStale(ctx context.Context, q Stale, params ydb.Params, each func(query.Row) error) error {
	rs, err := db.conn.drv.Query().QueryResultSet(ctx, db.yql(string(q)),
		execOpts(params, query.WithTxControl(query.StaleReadOnlyTxControl()), query.WithIdempotent())...)
	if err != nil {
		return err
	}
	defer rs.Close(ctx)
	return eachRow(ctx, rs, each)
}

func eachRow(ctx context.Context, rs query.ResultSet, each func(query.Row) error) error {
	for row, err := range rs.Rows(ctx) {
		if err != nil {
			return err
		}
		if err := each(row); err != nil {
			return err
		}
	}
	return nil
}

// IsNoRows reports query.ErrNoRows.
func IsNoRows(err error) bool { return errors.Is(err, query.ErrNoRows) }
