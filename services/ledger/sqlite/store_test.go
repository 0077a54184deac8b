package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/sqlite/sqlitetest"
	"github.com/prsaga/prsaga/services/ledger"
	ledgersqlite "github.com/prsaga/prsaga/services/ledger/sqlite"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func row(pr string, state contracts.State, at time.Time) contracts.Row {
	repo, _, err := contracts.ParsePRID(pr)
	if err != nil {
		panic(err)
	}
	return contracts.Row{Exists: true, PRID: pr, Repo: repo, CorrelationID: "run-" + strings.NewReplacer("/", "-", "#", "-").Replace(pr),
		State: state, Attempts: 1, CreatedAt: at, UpdatedAt: at}
}

func save(t *testing.T, s *ledger.Store, prev, next contracts.Row) error {
	t.Helper()
	return s.Update(context.Background(), func(tx ledger.Tx) error { return tx.SaveSaga(prev, next) })
}

func read(t *testing.T, s *ledger.Store, pr string) contracts.Row {
	t.Helper()
	var r contracts.Row
	err := s.Update(context.Background(), func(tx ledger.Tx) error {
		var err error
		r, err = tx.Saga(pr)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestSaveSagaIsConditional(t *testing.T) {
	s := ledgersqlite.NewStore(sqlitetest.Open(t, ledgersqlite.Migrations))
	const pr = "acme/widgets#1"
	if r := read(t, s, pr); r.Exists {
		t.Fatalf("empty store: row %+v exists", r)
	}
	first := row(pr, contracts.StateValidating, t0)
	if err := save(t, s, contracts.Row{}, first); err != nil {
		t.Fatalf("insert: %v", err)
	}
	v1 := read(t, s, pr)
	if !v1.Exists || v1.Version != 1 || v1.State != contracts.StateValidating || !v1.UpdatedAt.Equal(t0) {
		t.Fatalf("after insert: %+v, want version 1, VALIDATING at %v", v1, t0)
	}

	// A second insert (another writer that also saw no row) loses.
	if err := save(t, s, contracts.Row{}, first); !errors.Is(err, ledger.ErrConflict) {
		t.Fatalf("second insert: err = %v, want ErrConflict", err)
	}

	next := v1
	next.State, next.MergeSHA, next.Merged, next.UpdatedAt = contracts.StateNotifying, strings.Repeat("a", 40), true, t0.Add(time.Second)
	if err := save(t, s, v1, next); err != nil {
		t.Fatalf("update at version 1: %v", err)
	}
	v2 := read(t, s, pr)
	if v2.Version != 2 || v2.State != contracts.StateNotifying || !v2.Merged || v2.MergeSHA != next.MergeSHA {
		t.Fatalf("after update: %+v, want version 2, NOTIFYING, merged", v2)
	}

	// A writer that read version 1 is refused and changes nothing.
	stale := v1
	stale.State = contracts.StateMergeFailed
	if err := save(t, s, v1, stale); !errors.Is(err, ledger.ErrConflict) {
		t.Fatalf("update at stale version 1: err = %v, want ErrConflict", err)
	}
	if got := read(t, s, pr); got != v2 {
		t.Fatalf("stale update changed the row:\n got %+v\nwant %+v", got, v2)
	}
}

func TestAddTransitionsNumbersAfterTheLast(t *testing.T) {
	s := ledgersqlite.NewStore(sqlitetest.Open(t, ledgersqlite.Migrations))
	const pr = "acme/widgets#1"
	add := func(n int) []ledger.Transition {
		var out []ledger.Transition
		err := s.Update(context.Background(), func(tx ledger.Tx) error {
			ts := make([]ledger.Transition, n)
			for i := range ts {
				ts[i] = ledger.Transition{CorrelationID: "c", From: contracts.StateValidating, To: contracts.StateMerging, Reason: "r", At: t0}
			}
			var err error
			out, err = tx.AddTransitions(pr, ts)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if got := add(2); got[0].Seq != 1 || got[1].Seq != 2 {
		t.Fatalf("first seqs %d,%d, want 1,2", got[0].Seq, got[1].Seq)
	}
	if got := add(1); got[0].Seq != 3 {
		t.Fatalf("next seq %d, want 3", got[0].Seq)
	}
}

// seed writes 120 sagas over three repos and three states; every third
// one shares its updated_at with its neighbour, so that ties are broken by
// pr_id.
func seed(t *testing.T, s *ledger.Store) []contracts.Row {
	var rows []contracts.Row
	states := []contracts.State{contracts.StateValidating, contracts.StateMerged, contracts.StateMergeFailed}
	err := s.Update(context.Background(), func(tx ledger.Tx) error {
		for i := range 120 {
			pr := contracts.PRID(fmt.Sprintf("acme/repo%d", i%3), i+1)
			r := row(pr, states[(i/3)%3], t0.Add(time.Duration(i/2)*time.Second))
			if err := tx.SaveSaga(contracts.Row{}, r); err != nil {
				return err
			}
			rows = append(rows, r)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// wantOrder is the list order: updated_at descending, then pr_id descending.
func wantOrder(rows []contracts.Row, keep func(contracts.Row) bool) []string {
	var sel []contracts.Row
	for _, r := range rows {
		if keep(r) {
			sel = append(sel, r)
		}
	}
	slices.SortFunc(sel, func(a, b contracts.Row) int {
		if c := b.UpdatedAt.Compare(a.UpdatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.PRID, a.PRID)
	})
	ids := make([]string, len(sel))
	for i, r := range sel {
		ids[i] = r.PRID
	}
	return ids
}

func walk(t *testing.T, s *ledger.Store, f ledger.Filter) (ids []string, pages int) {
	t.Helper()
	for {
		p, err := s.List(context.Background(), f)
		if err != nil {
			t.Fatalf("list %+v: %v", f, err)
		}
		pages++
		for _, sg := range p.Sagas {
			ids = append(ids, sg.PRID)
		}
		if p.NextCursor == "" {
			return ids, pages
		}
		if len(p.Sagas) != f.WithDefaults().Limit {
			t.Fatalf("page %d has %d sagas and a next cursor; want a full page of %d", pages, len(p.Sagas), f.Limit)
		}
		c, err := ledger.ParseCursor(p.NextCursor)
		if err != nil {
			t.Fatalf("cursor %q: %v", p.NextCursor, err)
		}
		f.After = &c
		if pages > 200 {
			t.Fatal("pagination does not end")
		}
	}
}

func TestListFiltersAndPages(t *testing.T) {
	s := ledgersqlite.NewStore(sqlitetest.Open(t, ledgersqlite.Migrations))
	rows := seed(t, s)
	all := func(contracts.Row) bool { return true }
	cases := []struct {
		name  string
		f     ledger.Filter
		keep  func(contracts.Row) bool
		pages int
	}{
		{"all, one page", ledger.Filter{Limit: 500}, all, 1},
		{"all, default limit", ledger.Filter{}, all, 3},
		{"all, pages of 7", ledger.Filter{Limit: 7}, all, 18},
		{"state", ledger.Filter{State: contracts.StateMerged, Limit: 9},
			func(r contracts.Row) bool { return r.State == contracts.StateMerged }, 5},
		{"repo", ledger.Filter{Repo: "acme/repo1", Limit: 10},
			func(r contracts.Row) bool { return r.Repo == "acme/repo1" }, 4},
		{"state and repo", ledger.Filter{State: contracts.StateMergeFailed, Repo: "acme/repo2", Limit: 4},
			func(r contracts.Row) bool { return r.State == contracts.StateMergeFailed && r.Repo == "acme/repo2" }, 4},
		{"nothing", ledger.Filter{Repo: "acme/none"}, func(contracts.Row) bool { return false }, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, pages := walk(t, s, c.f)
			want := wantOrder(rows, c.keep)
			if !slices.Equal(got, want) {
				t.Fatalf("listed %d sagas:\n%v\nwant %d:\n%v", len(got), got, len(want), want)
			}
			if pages != c.pages {
				t.Errorf("%d pages, want %d", pages, c.pages)
			}
		})
	}
}

func TestListRejectsBadFilters(t *testing.T) {
	s := ledgersqlite.NewStore(sqlitetest.Open(t, ledgersqlite.Migrations))
	for _, f := range []ledger.Filter{
		{State: "DONE"},
		{Repo: "../etc"},
		{After: &ledger.Cursor{PRID: "x' OR 1=1 --"}},
	} {
		if _, err := s.List(context.Background(), f); !errors.Is(err, contracts.ErrInvalid) {
			t.Errorf("list %+v: err = %v, want ErrInvalid", f, err)
		}
	}
	for _, c := range []string{"", "!!", "e30", ledger.Cursor{PRID: "nope"}.String()} {
		if _, err := ledger.ParseCursor(c); !errors.Is(err, ledger.ErrBadCursor) {
			t.Errorf("ParseCursor(%q): err = %v, want ErrBadCursor", c, err)
		}
	}
	c := ledger.Cursor{UpdatedAt: t0, PRID: "acme/widgets#7"}
	if got, err := ledger.ParseCursor(c.String()); err != nil || got != c {
		t.Errorf("cursor round trip: %+v, %v; want %+v", got, err, c)
	}
}

// The list and the watchdog's future query are served by indexes, never a
// full scan of pr_saga.
func TestQueriesUseIndexes(t *testing.T) {
	db := sqlitetest.Open(t, ledgersqlite.Migrations)
	seed(t, ledgersqlite.NewStore(db))
	plan := func(q string, args ...any) string {
		rows, err := db.Reader().Query("EXPLAIN QUERY PLAN "+q, args...)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var b strings.Builder
		for rows.Next() {
			var id, parent, notused int
			var detail string
			if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
				t.Fatal(err)
			}
			b.WriteString(detail + "; ")
		}
		return b.String()
	}
	cur := " AND (updated_at, pr_id) < (?, ?)"
	order := " ORDER BY updated_at DESC, pr_id DESC LIMIT 10"
	for _, c := range []struct {
		q, index string
		args     []any
	}{
		{"SELECT * FROM pr_saga WHERE state = ?" + cur + order, "idx_saga_state", []any{"MERGED", 1, "a/b#1"}},
		{"SELECT * FROM pr_saga WHERE repo = ?" + cur + order, "idx_saga_repo", []any{"a/b", 1, "a/b#1"}},
		{"SELECT * FROM pr_saga WHERE 1" + cur + order, "idx_saga_updated", []any{1, "a/b#1"}},
		{"SELECT * FROM pr_saga WHERE state = ? AND updated_at < ? ORDER BY updated_at LIMIT 100", "idx_saga_state", []any{"MERGING", 1}},
	} {
		p := plan(c.q, c.args...)
		if !strings.Contains(p, c.index) || strings.Contains(p, "TEMP B-TREE") {
			t.Errorf("%s\nplan: %s\nwant %s with no sort", c.q, p, c.index)
		}
	}
}

func TestStatsCountsEveryState(t *testing.T) {
	s := ledgersqlite.NewStore(sqlitetest.Open(t, ledgersqlite.Migrations))
	rows := seed(t, s)
	st, err := s.Stats(context.Background(), ledger.RecentSteps(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	want := map[contracts.State]int{}
	for _, state := range contracts.States {
		want[state] = 0
	}
	for _, r := range rows {
		want[r.State]++
	}
	if st.Total != 120 || len(st.States) != len(want) {
		t.Fatalf("stats %+v, want total 120 and every state", st)
	}
	for k, v := range want {
		if st.States[k] != v {
			t.Errorf("%s: %d, want %d", k, st.States[k], v)
		}
	}
}

func TestGetUnknownIsNotFound(t *testing.T) {
	s := ledgersqlite.NewStore(sqlitetest.Open(t, ledgersqlite.Migrations))
	if _, err := s.Get(context.Background(), "acme/widgets#1"); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
	if evs, err := s.Events(context.Background(), "acme/widgets#1"); err != nil || len(evs) != 0 {
		t.Fatalf("events of unknown PR: %v, %v; want none", evs, err)
	}
}

func TestCheckNeedsMigrations(t *testing.T) {
	bare := ledgersqlite.NewStore(sqlitetest.Open(t))
	if err := bare.Check(context.Background()); err == nil {
		t.Fatal("Check passed on a database without the ledger's tables")
	}
}
