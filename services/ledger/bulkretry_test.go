package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/services/ledger"
)

// pages is a Lister over fixed sagas, most recently updated first, in
// pages of two: SelectFailed must follow the cursor.
type pages []ledger.Saga

func (p pages) List(_ context.Context, f ledger.Filter) (ledger.Page, error) {
	start := 0
	if f.After != nil {
		start = slices.IndexFunc(p, func(s ledger.Saga) bool { return s.PRID == f.After.PRID }) + 1
	}
	var page ledger.Page
	for _, s := range p[start:] {
		if s.State != f.State {
			continue
		}
		if page.Sagas = append(page.Sagas, s); len(page.Sagas) == 2 {
			if last := s; last.PRID != p[len(p)-1].PRID {
				page.NextCursor = ledger.CursorAfter(last).String()
			}
			break
		}
	}
	return page, nil
}

func TestSelectFailed(t *testing.T) {
	t0 := time.Date(2030, 1, 2, 3, 0, 0, 0, time.UTC)
	failed := func(n int, step contracts.State, err string, ago time.Duration) ledger.Saga {
		return ledger.Saga{PRID: contracts.PRID("acme/widgets", n), Repo: "acme/widgets", State: contracts.StateMergeFailed,
			FailedStep: step, LastError: err, Attempts: 1, UpdatedAt: t0.Add(-ago)}
	}
	all := pages{
		failed(1, contracts.StateNotifying, "webhook_failed: 503", time.Minute),
		{PRID: "acme/widgets#2", State: contracts.StateMerged, UpdatedAt: t0.Add(-2 * time.Minute)},
		failed(3, contracts.StateIndexing, "index_error: disk full", 3*time.Minute),
		failed(4, contracts.StateNotifying, "webhook_failed: timeout", 4*time.Minute),
		failed(5, contracts.StateNotifying, "webhook_failed: 503", 2*time.Hour),
	}
	for _, tc := range []struct {
		name string
		f    ledger.BulkFilter
		want []int
	}{
		{"every failed saga", ledger.BulkFilter{}, []int{1, 3, 4, 5}},
		{"one step", ledger.BulkFilter{Step: contracts.StateNotifying}, []int{1, 4, 5}},
		{"since", ledger.BulkFilter{Since: t0.Add(-time.Hour)}, []int{1, 3, 4}},
		{"reason", ledger.BulkFilter{Reason: "503$"}, []int{1, 5}},
		{"limit", ledger.BulkFilter{Step: contracts.StateNotifying, Limit: 2}, []int{1, 4}},
	} {
		got, err := ledger.SelectFailed(context.Background(), all, tc.f)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var ids []string
		for _, s := range got {
			ids = append(ids, s.PRID)
		}
		var want []string
		for _, n := range tc.want {
			want = append(want, fmt.Sprintf("acme/widgets#%d", n))
		}
		if !slices.Equal(ids, want) {
			t.Errorf("%s: selected %v, want %v", tc.name, ids, want)
		}
	}
	for _, bad := range []ledger.BulkFilter{{Step: "MERGED"}, {Repo: "../etc"}, {Reason: "("}, {Limit: -1}, {Limit: ledger.MaxBulk + 1}} {
		if _, err := ledger.SelectFailed(context.Background(), all, bad); !errors.Is(err, contracts.ErrInvalid) {
			t.Errorf("filter %+v: %v, want an invalid-field error", bad, err)
		}
	}
}
