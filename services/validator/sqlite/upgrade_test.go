package sqlite_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/prsaga/prsaga/platform/sqlite/sqlitetest"
	"github.com/prsaga/prsaga/platform/store"
	"github.com/prsaga/prsaga/services/validator"
	vsqlite "github.com/prsaga/prsaga/services/validator/sqlite"
)

// The validator's database written by each earlier schema version opens
// and migrates today, and its statuses, protection and PR locks read and
// write through today's store as they were (testdata/schema, made by go
// run ./platform/sqlite/schemafixtures).
func TestUpgradeFromEarlierVersions(t *testing.T) {
	const repo, sha = "acme/widgets", "1111111111111111111111111111111111111111"
	sqlitetest.EachFixture(t, func(t *testing.T, ctx context.Context, fixture string) {
		db := sqlitetest.Upgrade(t, fixture, sqlitetest.FixtureTime.Add(time.Hour), vsqlite.Migrations)
		st := vsqlite.NewStore(db)
		statuses, err := st.Statuses(ctx, repo, sha)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, s := range statuses {
			got = append(got, s.Context+"="+s.State+" "+s.Description)
		}
		slices.Sort(got)
		if want := []string{"ci=success all green", "lint=failure 2 warnings"}; !slices.Equal(got, want) {
			t.Errorf("statuses after the upgrade %v, want %v", got, want)
		}
		contexts, ok, err := st.Protection(ctx, repo, "main")
		if err != nil || !ok || !slices.Equal(contexts, []string{"ci", "lint"}) {
			t.Errorf("protection after the upgrade: %v, %v, %v; want [ci lint]", contexts, ok, err)
		}
		for pr, want := range map[string]validator.Lock{
			"acme/widgets#1": {Holder: "01JDX00000000000000CORR01", Attempt: 1},
			"acme/widgets#5": {Holder: "01JDX00000000000000CORR05", Attempt: 1, Merged: true},
			"acme/widgets#6": {Attempt: 2},
		} {
			if l, err := st.Lock(ctx, pr); err != nil || l != want {
				t.Errorf("lock of %s after the upgrade: %+v, %v; want %+v", pr, l, err, want)
			}
		}
		// Usable: the freed lock is taken by a new run.
		err = db.Update(ctx, func(stx store.Tx) error {
			tx, err := st.Bind(stx)
			if err != nil {
				return err
			}
			return tx.PutLock("acme/widgets#6", validator.Lock{Holder: "01JDX00000000000000CORR07", Attempt: 1})
		})
		if l, lerr := st.Lock(ctx, "acme/widgets#6"); err != nil || lerr != nil || l.Holder != "01JDX00000000000000CORR07" {
			t.Errorf("taking a lock after the upgrade: %+v, %v, %v", l, err, lerr)
		}
	})
}
