package server_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	psqlite "github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/platform/sqlite/sqlitetest"
	pstoretest "github.com/prsaga/prsaga/platform/store/storetest"
	pydb "github.com/prsaga/prsaga/platform/ydb"
	"github.com/prsaga/prsaga/services/merger/gitrepo"
	"github.com/prsaga/prsaga/services/merger/server"
	mydb "github.com/prsaga/prsaga/services/merger/ydb"
)

// TestJournalStores: the merge journal on every store — a PR's commits
// are those recorded for it, recording twice keeps one, and another PR's
// records are not its own. (YDB when PRSAGA_TEST_YDB is set.)
func TestJournalStores(t *testing.T) {
	schema := pstoretest.Schema{SQLite: []psqlite.Migrations{server.Migrations}, YDB: []pydb.Migrations{mydb.Migrations}}
	pstoretest.Stores(t, schema, func(t *testing.T, open pstoretest.Opener) {
		ctx := pstoretest.Context(t)
		db := open(t, pstoretest.NewClock(pstoretest.T0).Now)
		j, err := server.JournalOf(db)
		if err != nil {
			t.Fatal(err)
		}
		const pr = "acme/widgets#42"
		if got, err := j.Recorded(ctx, pr); err != nil || len(got) != 0 {
			t.Fatalf("Recorded of a new PR = %v, %v; want none", got, err)
		}
		sha := func(c string) string { return strings.Repeat(c, 40) }
		entry := func(prID, commit string) gitrepo.JournalEntry {
			return gitrepo.JournalEntry{Repo: "acme/widgets", PRID: prID, CorrelationID: "run-1", TargetBranch: "main",
				Strategy: "squash", Commit: commit, Base: sha("0")}
		}
		for _, e := range []gitrepo.JournalEntry{entry(pr, sha("a")), entry(pr, sha("b")), entry(pr, sha("a")), entry("acme/widgets#43", sha("c"))} {
			if err := j.Record(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
		got, err := j.Recorded(ctx, pr)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		if want := []string{sha("a"), sha("b")}; !slices.Equal(got, want) {
			t.Errorf("Recorded(%s) = %v, want %v", pr, got, want)
		}
	})
}

// BenchmarkJournal: what the journal adds to one merge on SQLite
// (PRSAGA_DURABILITY=process) — the read of the PR's records, then the
// record's own write transaction.
func BenchmarkJournal(b *testing.B) {
	db := sqlitetest.Open(b, server.Migrations)
	j, err := server.JournalOf(db)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for i := 0; b.Loop(); i++ {
		pr := fmt.Sprintf("acme/widgets#%d", i+1)
		if _, err := j.Recorded(ctx, pr); err != nil {
			b.Fatal(err)
		}
		e := gitrepo.JournalEntry{Repo: "acme/widgets", PRID: pr, CorrelationID: "run", TargetBranch: "main",
			Strategy: "merge", Commit: fmt.Sprintf("%040x", i+1), Base: strings.Repeat("0", 40)}
		if err := j.Record(ctx, e); err != nil {
			b.Fatal(err)
		}
	}
}
