// Package sqlitetest opens real SQLite databases in temp dirs for tests.
package sqlitetest

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/prsaga/prsaga/platform/sqlite"
)

// Open opens a fresh database file under t.TempDir() with the given
// migrations; it is closed by t.Cleanup.
func Open(t testing.TB, migs ...sqlite.Migrations) *sqlite.DB {
	t.Helper()
	return OpenFile(t, filepath.Join(t.TempDir(), "db.sqlite"), migs...)
}

// OpenFile opens the database file at path with the given migrations, as
// one more process sharing the file would: several handles on one file are
// several processes. It is closed by t.Cleanup.
func OpenFile(t testing.TB, path string, migs ...sqlite.Migrations) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(context.Background(), path, sqlite.Options{}, migs...)
	if err != nil {
		t.Fatalf("open sqlite: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// Column is the first column of query's rows, in order, read as text;
// a failed query or scan fails the test.
func Column(t testing.TB, ctx context.Context, q *sql.DB, query string, args ...any) []string {
	t.Helper()
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
