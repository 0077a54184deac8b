package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/platform/store"
	"github.com/prsaga/prsaga/platform/ydb"
)

// EnvYDB names the environment variable holding the DSN of a YDB database
// for the suite (e.g. grpc://localhost:2136/local). Unset: YDB is skipped.
const EnvYDB = "PRSAGA_TEST_YDB"

// SkipLine is what the suite says when it skips YDB.
const SkipLine = "storetest: YDB skipped: " + EnvYDB + " not set"

// Opener opens a fresh, empty database with the suite's schema, using now
// as the store's clock. The test's cleanup closes it (and drops its tables).
type Opener func(t *testing.T, now func() time.Time) store.DB

// Schema is what a suite needs created, per store: the service's
// migrations (the platform's outbox and inbox always come first).
type Schema struct {
	SQLite []sqlite.Migrations
	YDB    []ydb.Migrations
}

// Stores runs suite once per store adapter, as subtests "sqlite" and
// "ydb". Without PRSAGA_TEST_YDB the ydb subtest logs SkipLine and skips.
func Stores(t *testing.T, schema Schema, suite func(t *testing.T, open Opener)) {
	t.Run("sqlite", func(t *testing.T) {
		suite(t, func(t *testing.T, now func() time.Time) store.DB {
			t.Helper()
			db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "db.sqlite"), sqlite.Options{Now: now}, schema.SQLite...)
			if err != nil {
				t.Fatalf("open sqlite: %v", err)
			}
			t.Cleanup(func() { db.Close() })
			return db
		})
	})
	t.Run("ydb", func(t *testing.T) {
		dsn := os.Getenv(EnvYDB)
		if dsn == "" {
			t.Log(SkipLine)
			t.Skip("no YDB to run against: set " + EnvYDB + "=grpc://localhost:2136/local to run the suite on YDB")
		}
		conn := connectYDB(t, dsn)
		suite(t, func(t *testing.T, now func() time.Time) store.DB {
			t.Helper()
			return OpenYDB(t, conn, now, schema.YDB...)
		})
	})
}

var ydbConns sync.Map // dsn -> *ydb.Conn, one per test binary

func connectYDB(t *testing.T, dsn string) *ydb.Conn {
	t.Helper()
	if c, ok := ydbConns.Load(dsn); ok {
		return c.(*ydb.Conn)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := ydb.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("%s: %v", EnvYDB, err)
	}
	if prev, loaded := ydbConns.LoadOrStore(dsn, c); loaded {
		_ = c.Close(ctx)
		return prev.(*ydb.Conn)
	}
	return c
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// OpenYDB opens a directory of its own for the test (prsaga_test/<test>_<random>)
// with the given migrations and drops it when the test ends.
func OpenYDB(t *testing.T, conn *ydb.Conn, now func() time.Time, migs ...ydb.Migrations) *ydb.DB {
	t.Helper()
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	name := strings.Trim(unsafeName.ReplaceAllString(t.Name(), "_"), "_")
	if len(name) > 60 {
		name = name[len(name)-60:]
	}
	prefix := "prsaga_test/" + name + "_" + hex.EncodeToString(rnd[:])
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	db, err := ydb.Open(ctx, conn, ydb.Options{Prefix: prefix, Now: now}, migs...)
	if err != nil {
		t.Fatalf("open ydb %s: %v", prefix, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := db.Drop(ctx); err != nil {
			t.Logf("drop %s: %v", prefix, err)
		}
	})
	return db
}

// Clock is a settable clock for the store under test. Safe for concurrent
// use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock starts a clock at t (truncated to microseconds, what both
// stores keep).
func NewClock(t time.Time) *Clock { return &Clock{t: t.UTC().Truncate(time.Microsecond)} }

// Now reads the clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t.UTC().Truncate(time.Microsecond)
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
