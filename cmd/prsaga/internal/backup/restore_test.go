package backup

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/fault"
	"github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/platform/sqlite/sqlitetest"
	"github.com/prsaga/prsaga/services/merger/gitrepo"
	mergersql "github.com/prsaga/prsaga/services/merger/sqlite"
)

// Two restores in one second each get a kept directory of their own.
func TestReserveKeptNeverShares(t *testing.T) {
	dbDir := t.TempDir()
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	a, _, err := reserveKept(dbDir, now)
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := reserveKept(dbDir, now.Add(500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if a == b {
		t.Fatalf("both restores got %s", a)
	}
	got, err := keptDirs(dbDir)
	if err != nil || !slices.Equal(got, []string{a, b}) {
		t.Fatalf("kept directories %v (%v), want %v", got, err, []string{a, b})
	}
}

// moveAside refuses to move a database over a file of that name in the
// kept directory, and leaves the database where it was.
func TestMoveAsideNeverReplacesAKeptFile(t *testing.T) {
	dbDir, kept := t.TempDir(), t.TempDir()
	dst := filepath.Join(dbDir, "merger.sqlite")
	writeJournal(t, dst, "o/r#1")
	if err := os.WriteFile(filepath.Join(kept, "merger.sqlite"), []byte("kept before"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := moveAside(context.Background(), dst, kept, nil); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Fatalf("moveAside over a kept file: %v, want an error saying it exists", err)
	}
	if b, _ := os.ReadFile(filepath.Join(kept, "merger.sqlite")); string(b) != "kept before" {
		t.Fatalf("the kept file was replaced")
	}
	if _, err := os.Stat(dst); err != nil {
		t.Fatalf("the database left its place: %v", err)
	}
}

// A restore interrupted after the backup's merger database was copied in
// (before the journal was carried over) and run again keeps every journal
// row: the second run moves the backup's copy aside and carries the rows
// over from the first run's kept directory too.
func TestRestoreDBRunAgainCarriesEveryKeptJournal(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	dbDir, backupDir := filepath.Join(dir, "db"), filepath.Join(dir, "backup")
	live := filepath.Join(dbDir, "merger.sqlite")
	writeJournal(t, live, "o/r#1")
	if err := os.MkdirAll(backupDir, 0o700); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(backupDir, "merger.sqlite")
	if _, err := copyDB(ctx, live, src); err != nil {
		t.Fatal(err)
	}
	writeJournal(t, live, "o/r#2") // squashed after the backup

	now := time.Now()
	kept1, _, err := reserveKept(dbDir, now)
	if err != nil {
		t.Fatal(err)
	}
	disarm := fault.Arm(fault.Rule{Point: FaultDBCopied, Action: fault.Error})
	_, err = restoreDB(ctx, src, live, kept1, contracts.ServiceMerger, nil)
	disarm()
	if !errors.Is(err, fault.ErrInjected) {
		t.Fatalf("first run: %v, want the injected fault after the copy", err)
	}
	if got := journalPRs(t, live); !slices.Equal(got, []string{"o/r#1"}) {
		t.Fatalf("after the interrupted run the journal has %v, want the backup's [o/r#1]", got)
	}

	kept2, _, err := reserveKept(dbDir, now)
	if err != nil {
		t.Fatal(err)
	}
	var warn strings.Builder
	n, err := restoreDB(ctx, src, live, kept2, contracts.ServiceMerger, &warn)
	if err != nil {
		t.Fatal(err)
	}
	if got := journalPRs(t, live); !slices.Equal(got, []string{"o/r#1", "o/r#2"}) || n != 1 {
		t.Fatalf("after running again the journal has %v (%d rows carried), want [o/r#1 o/r#2] (1 row)", got, n)
	}
	for _, k := range []string{kept1, kept2} {
		if _, err := os.Stat(filepath.Join(k, "merger.sqlite")); err != nil {
			t.Errorf("kept directory %s lost its database: %v", k, err)
		}
	}
	if warn.Len() != 0 {
		t.Errorf("warnings: %s", warn.String())
	}
}

func writeJournal(t *testing.T, path, prID string) {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, path, sqlite.Options{}, mergersql.Migrations)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sha := strings.Repeat("a", 39) + prID[len(prID)-1:]
	if err := (&mergersql.Journal{DB: db}).Record(ctx, gitrepo.JournalEntry{Repo: "o/r", PRID: prID, TargetBranch: "main",
		Strategy: "squash", Commit: sha, Base: strings.Repeat("b", 40)}); err != nil {
		t.Fatal(err)
	}
}

func journalPRs(t *testing.T, path string) []string {
	t.Helper()
	db, err := openFile(path, true)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	return sqlitetest.Column(t, context.Background(), db, `SELECT pr_id FROM merge_journal ORDER BY pr_id`)
}
