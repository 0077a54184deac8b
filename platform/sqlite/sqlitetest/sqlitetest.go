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
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "db.sqlite"), sqlite.Options{}, migs...)
	if err != nil {
		t.Fatalf("open sqlite: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
