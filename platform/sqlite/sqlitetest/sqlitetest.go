// Package sqlitetest opens real SQLite databases in temp dirs for tests.
package sqlitetest

import (
	"context"
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
