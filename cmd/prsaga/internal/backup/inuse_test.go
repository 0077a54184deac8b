package backup

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/services/indexer/bleveindex"
)

// InUse sees a service's database open (SQLite's locks, here held by a
// connection of this very process) and an indexer holding the index, and
// nothing once they are closed.
func TestInUseSeesOpenDatabasesAndTheIndexWriter(t *testing.T) {
	dir := t.TempDir()
	dbDir, indexDir := filepath.Join(dir, "db"), filepath.Join(dir, "index")
	if got := InUse(dbDir, indexDir); len(got) != 0 {
		t.Fatalf("nothing exists yet, InUse says %v", got)
	}
	db, err := sqlite.Open(context.Background(), filepath.Join(dbDir, "merger.sqlite"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	x, err := bleveindex.OpenWriter(indexDir, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(InUse(dbDir, indexDir), "\n")
	if !strings.Contains(got, "merger database") || !strings.Contains(got, "indexer holds the search index") {
		t.Fatalf("with the merger's database and the index open, InUse says %q", got)
	}
	if strings.Contains(got, "ledger") {
		t.Fatalf("InUse names a database that does not exist: %q", got)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	if got := InUse(dbDir, indexDir); len(got) != 0 {
		t.Fatalf("everything closed, InUse says %v", got)
	}
}
