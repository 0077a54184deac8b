package gitlog

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/prsaga/prsaga/platform/gittest"
)

// The decoded commits stay within two generations of the budget, keep what
// is used, and forget what is not.
func TestCommitsBudget(t *testing.T) {
	cs := newCommits(10 * commitCost)
	key := func(i int) commitKey { return commitKey{"r", plumbing.NewHash(fmt.Sprintf("%040x", i))} }
	c := func(i int) *object.Commit { return &object.Commit{Message: fmt.Sprint(i)} }
	for i := range 10 {
		cs.put(key(i), c(i))
	}
	// Past the budget a new generation starts; the first commits are old.
	cs.put(key(10), c(10))
	if _, ok := cs.get(key(3)); !ok { // used: moves to the current one
		t.Fatal("commit 3 forgotten one generation after it was put")
	}
	for i := 11; i < 20; i++ {
		cs.put(key(i), c(i))
	}
	if _, ok := cs.get(key(3)); !ok {
		t.Error("commit 3, used in the last generation, forgotten")
	}
	if _, ok := cs.get(key(4)); ok {
		t.Error("commit 4, unused for two generations, still kept")
	}
	if n := len(cs.cur) + len(cs.prev); n > 2*10 {
		t.Errorf("%d commits kept; want at most two generations of 10", n)
	}
	if _, ok := cs.get(commitKey{"other", key(3).h}); ok {
		t.Error("a commit of one repository found in another")
	}
}

// More repositories than are kept open, read concurrently and more than
// once, with a budget small enough to turn generations over: every answer
// is the one a fresh Reader gives.
func TestReaderManyRepositories(t *testing.T) {
	root := t.TempDir()
	const repos = maxOpen + 4
	shas := make([]string, repos)
	for i := range repos {
		r := gittest.NewBare(t, root, fmt.Sprintf("acme/r%d", i),
			gittest.Commit{Name: "b", Branch: "main", Message: "base", At: time.Unix(0, 0)},
			gittest.Commit{Name: "f", Branch: "f", Parents: []string{"b"}, Message: fmt.Sprintf("feature %d", i), At: time.Unix(60, 0)},
			gittest.Commit{Name: "b2", Branch: "main", Parents: []string{"b"}, Message: "target moved", At: time.Unix(120, 0)},
			gittest.Commit{Name: "m", Branch: "main", Parents: []string{"b2", "f"}, Message: fmt.Sprintf("merge %d", i), At: time.Unix(180, 0)},
		)
		shas[i] = r.SHA["m"]
	}
	r, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	r.commits = newCommits(3 * commitCost)
	var wg sync.WaitGroup
	errs := make(chan string, 4*repos)
	for w := range 4 {
		wg.Go(func() {
			for k := range 2 * repos {
				i := (k + w*7) % repos
				m, err := r.Merged(t.Context(), fmt.Sprintf("acme/r%d", i), shas[i])
				want := []string{fmt.Sprintf("merge %d", i), fmt.Sprintf("feature %d", i)}
				if err != nil || !slices.Equal(m.Messages, want) {
					errs <- fmt.Sprintf("acme/r%d: %q, %v; want %q", i, m.Messages, err, want)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	var all []string
	for e := range errs {
		all = append(all, e)
	}
	if len(all) > 0 {
		t.Errorf("%d wrong answers, e.g.\n%s", len(all), strings.Join(all[:min(len(all), 5)], "\n"))
	}
	if len(r.repos) > maxOpen {
		t.Errorf("%d repositories open, want at most %d", len(r.repos), maxOpen)
	}
}
