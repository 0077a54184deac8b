package sqlite_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prsaga/prsaga/platform/sqlite/sqlitetest"
	"github.com/prsaga/prsaga/services/merger/gitrepo"
	msqlite "github.com/prsaga/prsaga/services/merger/sqlite"
)

// The merger's database written by each earlier schema version (before it
// had a journal, and since) opens and migrates today; a journal entry it
// held is still the proof of its merge, and a new one records (testdata/
// schema, made by go run ./platform/sqlite/schemafixtures).
func TestUpgradeFromEarlierVersions(t *testing.T) {
	const pr, mergeSHA = "acme/widgets#5", "3333333333333333333333333333333333333333"
	sqlitetest.EachFixture(t, func(t *testing.T, ctx context.Context, fixture string) {
		db := sqlitetest.Upgrade(t, fixture, sqlitetest.FixtureTime.Add(time.Hour), msqlite.Migrations)
		j := &msqlite.Journal{DB: db}
		got, err := j.Recorded(ctx, pr)
		if err != nil {
			t.Fatal(err)
		}
		// The fixtures of versions before the journal have no entry.
		var want []string
		if hadJournal(t, fixture) {
			want = []string{mergeSHA}
		}
		if !slices.Equal(got, want) {
			t.Errorf("journal of %s after the upgrade %v, want %v", pr, got, want)
		}
		e := gitrepo.JournalEntry{Repo: "acme/widgets", PRID: "acme/widgets#8", CorrelationID: "01JDX00000000000000CORR08",
			TargetBranch: "main", Strategy: gitrepo.StrategyMerge, Commit: strings.Repeat("4", 40), Base: strings.Repeat("2", 40)}
		if err := j.Record(ctx, e); err != nil {
			t.Fatalf("record after the upgrade: %v", err)
		}
		if got, err := j.Recorded(ctx, e.PRID); err != nil || !slices.Equal(got, []string{e.Commit}) {
			t.Errorf("journal after recording: %v, %v", got, err)
		}
	})
}

// hadJournal reports whether the fixture's version had the merger's own
// migrations.
func hadJournal(t *testing.T, fixture string) bool {
	t.Helper()
	return sqlitetest.HadMigration(t, fixture, "merger", "0001_merge_journal.sql")
}
