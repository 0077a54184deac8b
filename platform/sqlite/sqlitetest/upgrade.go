package sqlitetest

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/platform/store"
)

// FixtureTime is when the upgrade fixtures' rows were written
// (platform/sqlite/schemafixtures); open them with a clock near it, so that
// what expires by age has not.
var FixtureTime = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// Fixtures lists the upgrade fixtures in dir (testdata/schema of a store's
// package): one database per earlier schema version. None is a failure:
// every store has had at least one earlier version.
func Fixtures(t testing.TB, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.db"))
	if err != nil || len(files) == 0 {
		t.Fatalf("upgrade fixtures in %s: %v, %v; generate them with go run ./platform/sqlite/schemafixtures", dir, files, err)
	}
	return files
}

// Upgrade opens a copy of fixture — a database an earlier schema version
// wrote — with today's code: sqlite.Open with migs, the path a service's
// start takes, at clock now. It checks what every store must keep across
// an upgrade and returns the open database (closed by t.Cleanup):
//   - the fixture was at an earlier version, and is now at today's: the
//     migrations and the schema are those of a database created today;
//   - every inbox entry still dedupes: its event is handled, a redelivery
//     is not recorded again;
//   - every unsent outbox row is still unsent (left so for the caller's
//     relay) and decodes as the event it was; every sent row stays sent.
func Upgrade(t testing.TB, fixture string, now time.Time, migs ...sqlite.Migrations) *sqlite.DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	path := copyFixture(t, fixture, "upgraded.sqlite")
	before := snapshot(t, ctx, path)

	db, err := sqlite.Open(ctx, path, sqlite.Options{Now: func() time.Time { return now }}, migs...)
	if err != nil {
		t.Fatalf("open %s with today's migrations: %v", filepath.Base(fixture), err)
	}
	t.Cleanup(func() { db.Close() })
	fresh := Open(t, migs...)
	want, got := schemaOf(t, ctx, fresh.Reader()), schemaOf(t, ctx, db.Reader())
	if len(before.migrations) >= len(want.migrations) {
		t.Errorf("%s had %d migrations, today has %d: not an earlier version", filepath.Base(fixture), len(before.migrations), len(want.migrations))
	}
	if !slices.Equal(got.migrations, want.migrations) {
		t.Errorf("migrations after the upgrade:\n%v\nwant today's:\n%v", got.migrations, want.migrations)
	}
	if !slices.Equal(got.objects, want.objects) {
		t.Errorf("schema after the upgrade:\n%v\nwant today's:\n%v", got.objects, want.objects)
	}

	if len(before.inbox) == 0 || len(before.unsent) == 0 || len(before.sent) == 0 {
		t.Fatalf("fixture %s: inbox %v, unsent %v, sent %v; want rows in each", filepath.Base(fixture), before.inbox, before.unsent, before.sent)
	}
	for _, k := range before.inbox {
		if ok, err := db.Processed(ctx, k[0], k[1]); err != nil || !ok {
			t.Errorf("inbox entry %v after the upgrade: processed %v, %v; want true", k, ok, err)
		}
		err := db.Update(ctx, func(tx store.Tx) error {
			first, err := tx.MarkProcessed(k[0], k[1])
			if err == nil && first {
				t.Errorf("inbox entry %v after the upgrade: a redelivery was recorded as new", k)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	rows, err := db.Unsent(ctx, 100)
	if err != nil {
		t.Fatalf("unsent rows after the upgrade: %v", err)
	}
	var ids []string
	for _, r := range rows {
		ids = append(ids, r.ID)
		e, err := bus.Decode(r.Header, r.Body)
		if err != nil {
			t.Errorf("unsent row %s after the upgrade: %v", r.ID, err)
			continue
		}
		if subject, _ := contracts.SubjectOf(e); e.ID() != r.ID || subject != bus.RowMsg(r).Subject {
			t.Errorf("unsent row %s decodes as event %s of type %s; want its id, an event published on %s", r.ID, e.ID(), e.Type(), bus.RowMsg(r).Subject)
		}
		if _, err := contracts.Open(e); err != nil {
			t.Errorf("unsent row %s: %v", r.ID, err)
		}
	}
	if !slices.Equal(ids, before.unsent) {
		t.Errorf("unsent rows after the upgrade %v, want %v", ids, before.unsent)
	}
	var n int
	if err := db.Reader().QueryRowContext(ctx, `SELECT count(*) FROM outbox`).Scan(&n); err != nil || n != len(before.sent)+len(before.unsent) {
		t.Errorf("outbox rows after the upgrade: %d (%v), want %d", n, err, len(before.sent)+len(before.unsent))
	}
	return db
}

// shape is a database's recorded migrations and its schema objects.
type shape struct {
	migrations []string
	objects    []string
}

func schemaOf(t testing.TB, ctx context.Context, q *sql.DB) shape {
	t.Helper()
	var s shape
	s.migrations = Column(t, ctx, q, `SELECT component || '/' || name FROM schema_migrations ORDER BY component, name`)
	s.objects = Column(t, ctx, q, `SELECT type || ' ' || name || ': ' || coalesce(sql, '') FROM sqlite_schema ORDER BY type, name`)
	return s
}

// held is what a fixture held before it was opened.
type held struct {
	migrations   []string
	inbox        [][2]string
	unsent, sent []string
}

func snapshot(t testing.TB, ctx context.Context, path string) held {
	t.Helper()
	raw, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	b := held{
		migrations: Column(t, ctx, raw, `SELECT component || '/' || name FROM schema_migrations ORDER BY component, name`),
		unsent:     Column(t, ctx, raw, `SELECT id FROM outbox WHERE sent_at IS NULL ORDER BY created_at`),
		sent:       Column(t, ctx, raw, `SELECT id FROM outbox WHERE sent_at IS NOT NULL ORDER BY created_at`),
	}
	rows, err := raw.QueryContext(ctx, `SELECT consumer, event_id FROM inbox ORDER BY consumer, event_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var k [2]string
		if err := rows.Scan(&k[0], &k[1]); err != nil {
			t.Fatal(err)
		}
		b.inbox = append(b.inbox, k)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return b
}

// HadMigration reports whether the fixture file (as committed, before any
// upgrade) had component's migration name applied: what a test of rows that only
// some versions could hold asks.
func HadMigration(t testing.TB, fixture, component, name string) bool {
	t.Helper()
	// A copy: even a read-only open of a WAL database leaves files beside it.
	raw, err := sql.Open("sqlite", "file:"+copyFixture(t, fixture, "fixture.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var n int
	if err := raw.QueryRow(`SELECT count(*) FROM schema_migrations WHERE component = ? AND name = ?`, component, name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n > 0
}

// copyFixture copies the committed fixture file to name in a directory of
// the test's own, so that nothing the test opens changes the fixture.
func copyFixture(t testing.TB, fixture, name string) string {
	t.Helper()
	body, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, body, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
