package bleveindex

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prsaga/prsaga/services/indexer"
)

const sha1 = "0123456789abcdef0123456789abcdef01234567"

func widgets42() Doc {
	return Doc{
		PRID:         "acme/widgets#42",
		Repo:         "acme/widgets",
		PRNumber:     42,
		TargetBranch: "main",
		SourceBranch: "fix/token",
		Title:        "Fix the token refresh",
		RequestedBy:  "alice",
		MergeSHA:     sha1,
		ChangedPaths: []string{"internal/auth/token.go", "README.md"},
		Messages:     []string{"Handle expired tokens\n\nPrsaga-PR: acme/widgets#42"},
		MergedAt:     time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC),
	}
}

func gadgets7() Doc {
	return Doc{
		PRID:         "acme/gadgets#7",
		Repo:         "acme/gadgets",
		PRNumber:     7,
		TargetBranch: "release/1.x",
		SourceBranch: "feature/page",
		Title:        "Add widgets page",
		RequestedBy:  "bob",
		MergeSHA:     "89abcdef0123456789abcdef0123456789abcdef",
		ChangedPaths: []string{"web/pages/widgets.tsx"},
		Messages:     []string{"Add a page listing widgets"},
		MergedAt:     time.Date(2024, 11, 5, 9, 30, 0, 0, time.UTC),
	}
}

// openTemp opens a new index in a temporary directory, closed at the end of
// the test.
func openTemp(t *testing.T) (*Index, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "index")
	x, err := Open(dir, time.Second)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := x.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return x, dir
}

func upsert(t *testing.T, x *Index, docs ...Doc) {
	t.Helper()
	if err := x.Upsert(t.Context(), docs...); err != nil {
		t.Fatalf("Upsert: %v", err)
	}
}

func count(t *testing.T, x *Index) uint64 {
	t.Helper()
	n, err := x.Count()
	if err != nil {
		t.Fatalf("Count: %v", err)
	}
	return n
}

// ids runs q and returns the PR ids of its hits.
func ids(t *testing.T, x *Index, q string) []string {
	t.Helper()
	res, err := x.Search(t.Context(), Query{Text: q, Limit: 10})
	if err != nil {
		t.Fatalf("Search(%q): %v", q, err)
	}
	var out []string
	for _, h := range res.Hits {
		out = append(out, h.PRID)
	}
	return out
}

func TestUpsertReplacesByPRID(t *testing.T) {
	x, _ := openTemp(t)
	first := widgets42()
	upsert(t, x, first)
	second := widgets42()
	second.Title = "Rotate signing keys"
	second.MergeSHA = "fedcba9876543210fedcba9876543210fedcba98"
	upsert(t, x, second)

	if n := count(t, x); n != 1 {
		t.Fatalf("Count after upserting one PR twice = %d, want 1", n)
	}
	res, err := x.Search(t.Context(), Query{Text: "title:rotate", Limit: 10})
	if err != nil || len(res.Hits) != 1 {
		t.Fatalf("Search(title:rotate) = %+v, %v; want the PR", res, err)
	}
	if h := res.Hits[0]; h.Title != second.Title || h.MergeSHA != second.MergeSHA {
		t.Errorf("hit = %+v, want the second title %q and sha %s", h, second.Title, second.MergeSHA)
	}
	if got := ids(t, x, "title:refresh"); len(got) != 0 {
		t.Errorf("the first title still matches: %v", got)
	}
}

func TestUpsertBatch(t *testing.T) {
	x, _ := openTemp(t)
	later := widgets42()
	later.Title = "Second thoughts"
	upsert(t, x, widgets42(), gadgets7(), later)
	if n := count(t, x); n != 2 {
		t.Fatalf("Count = %d, want 2", n)
	}
	if got := ids(t, x, "title:thoughts"); len(got) != 1 || got[0] != "acme/widgets#42" {
		t.Errorf("title:thoughts = %v, want the later doc of the batch to win", got)
	}
	if err := x.Upsert(t.Context()); err != nil {
		t.Errorf("Upsert of nothing = %v, want nil", err)
	}
}

func TestUpsertIsAllOrNothing(t *testing.T) {
	x, _ := openTemp(t)
	if err := x.Upsert(t.Context(), gadgets7(), Doc{Title: "no id"}); err == nil {
		t.Fatal("Upsert of a doc without a PR id succeeded")
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := x.Upsert(ctx, gadgets7()); !errors.Is(err, context.Canceled) {
		t.Errorf("Upsert with a cancelled context = %v, want context.Canceled", err)
	}
	if n := count(t, x); n != 0 {
		t.Errorf("Count after failed upserts = %d, want 0", n)
	}
}

func TestReopenKeepsDocuments(t *testing.T) {
	x, dir := openTemp(t)
	upsert(t, x, widgets42(), gadgets7())
	if err := x.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	x, err := Open(dir, time.Second)
	if err != nil {
		t.Fatalf("Open (existing): %v", err)
	}
	defer x.Close()
	if n := count(t, x); n != 2 {
		t.Errorf("Count after reopening = %d, want 2", n)
	}
	// The mapping was kept too: keyword and path fields still work.
	if got := ids(t, x, "repo:acme/widgets changed_paths:auth"); len(got) != 1 || got[0] != "acme/widgets#42" {
		t.Errorf("search after reopening = %v, want [acme/widgets#42]", got)
	}
}

func TestOpenCreatesInAnEmptyDirectory(t *testing.T) {
	dir := t.TempDir() // exists and is empty, like a fresh volume
	x, err := Open(dir, time.Second)
	if err != nil {
		t.Fatalf("Open on an empty directory: %v", err)
	}
	defer x.Close()
	upsert(t, x, gadgets7())
	if n := count(t, x); n != 1 {
		t.Errorf("Count = %d, want 1", n)
	}
}

func TestSecondOpenTimesOut(t *testing.T) {
	x, dir := openTemp(t)
	upsert(t, x, widgets42())

	const lockTimeout = 200 * time.Millisecond
	type result struct {
		x   *Index
		err error
		d   time.Duration
	}
	done := make(chan result, 1)
	go func() {
		start := time.Now()
		y, err := Open(dir, lockTimeout)
		done <- result{y, err, time.Since(start)}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a second Open on a held index is still blocked after 10s")
	}
	if r.err == nil {
		r.x.Close()
		t.Fatal("a second Open on a held index succeeded")
	}
	if !errors.Is(r.err, ErrLocked) {
		t.Errorf("second Open = %v, want ErrLocked", r.err)
	}
	// bbolt gives up one 50ms lock retry before the timeout is over.
	if r.d < lockTimeout/2 || r.d > lockTimeout+5*time.Second {
		t.Errorf("second Open failed after %s, want about the %s lock timeout", r.d, lockTimeout)
	}
	// The first handle is unharmed.
	upsert(t, x, gadgets7())
	if n := count(t, x); n != 2 {
		t.Errorf("Count on the first handle = %d, want 2", n)
	}
}

func TestOpenAfterCloseTakesTheLock(t *testing.T) {
	x, dir := openTemp(t)
	if err := x.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	y, err := Open(dir, 200*time.Millisecond)
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	y.Close()
}

func TestConcurrentUse(t *testing.T) {
	x, _ := openTemp(t)
	const writers, perWriter = 4, 5
	var wg sync.WaitGroup
	errs := make(chan error, 2*writers*perWriter)
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				d := widgets42()
				d.PRNumber = w*100 + i
				d.PRID = fmt.Sprintf("acme/widgets#%d", d.PRNumber)
				if err := x.Upsert(context.Background(), d); err != nil {
					errs <- err
				}
				if _, err := x.Search(context.Background(), Query{Text: "token", Limit: 5}); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent call: %v", err)
	}
	if n := count(t, x); n != writers*perWriter {
		t.Errorf("Count = %d, want %d", n, writers*perWriter)
	}
}

func TestReopen(t *testing.T) {
	x, dir := openTemp(t)
	upsert(t, x, widgets42())
	if err := x.Reopen(); err != nil {
		t.Fatalf("Reopen: %v", err)
	}
	if err := x.Ready(); err != nil {
		t.Errorf("Ready after Reopen = %v", err)
	}
	upsert(t, x, gadgets7())
	if n := count(t, x); n != 2 {
		t.Errorf("Count after Reopen = %d, want 2", n)
	}

	// Another opener takes the index while this handle is reopening: the
	// reopen fails, and the index stays closed until a reopen succeeds.
	x.mu.Lock() // hold off Reopen's own open until the other has the lock
	_ = x.idx.Close()
	x.idx = nil
	x.mu.Unlock()
	other, err := Open(dir, time.Second)
	if err != nil {
		t.Fatalf("Open by another: %v", err)
	}
	x.lockTimeout = 100 * time.Millisecond
	if err := x.Reopen(); !errors.Is(err, ErrLocked) {
		t.Errorf("Reopen while another holds the index = %v, want ErrLocked", err)
	}
	if err := x.Ready(); !errors.Is(err, ErrNotOpen) || !errors.Is(err, ErrLocked) {
		t.Errorf("Ready = %v, want ErrNotOpen saying ErrLocked", err)
	}
	if err := x.Upsert(t.Context(), widgets42()); !errors.Is(err, ErrNotOpen) {
		t.Errorf("Upsert while not open = %v, want ErrNotOpen", err)
	}
	if _, err := x.Search(t.Context(), Query{Text: "token"}); !errors.Is(err, ErrNotOpen) {
		t.Errorf("Search while not open = %v, want ErrNotOpen", err)
	}
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	if err := x.Reopen(); err != nil {
		t.Fatalf("Reopen after the other closed: %v", err)
	}
	if n := count(t, x); n != 2 {
		t.Errorf("Count after the second Reopen = %d, want 2", n)
	}
}

func TestClosedIndex(t *testing.T) {
	x, _ := openTemp(t)
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	if err := x.Close(); err != nil {
		t.Errorf("second Close = %v, want nil", err)
	}
	for name, err := range map[string]error{
		"Upsert": x.Upsert(t.Context(), widgets42()),
		"Reopen": x.Reopen(),
		"Ready":  x.Ready(),
	} {
		if !errors.Is(err, indexer.ErrClosed) {
			t.Errorf("%s after Close = %v, want indexer.ErrClosed", name, err)
		}
	}
}
