package revwalk_test

import (
	"context"
	"crypto/sha1"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/prsaga/prsaga/platform/revwalk"
)

// graph is a history held in memory: commits by hash, and the order they
// were made in.
type graph struct {
	byHash map[plumbing.Hash]*object.Commit
	made   []*object.Commit
}

// randomGraph makes n commits on a few branches that fork and merge each
// other. Each commit is dated ten minutes after the last; with skew, one in
// eight goes back by up to two and a half commits (within the walk's slop).
func randomGraph(rng *rand.Rand, n int, skew bool) *graph {
	g := &graph{byHash: map[plumbing.Hash]*object.Commit{}}
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	heads := map[int]*object.Commit{}
	for i := range n {
		m := 10 * i
		if skew && rng.IntN(8) == 0 {
			m -= rng.IntN(25)
		}
		c := &object.Commit{
			Hash:      plumbing.Hash(sha1.Sum(fmt.Appendf(nil, "c%d", i))),
			Message:   fmt.Sprintf("c%d", i),
			Committer: object.Signature{When: t0.Add(time.Duration(m) * time.Minute)},
		}
		br := rng.IntN(4)
		if i > 0 {
			first, ok := heads[br]
			if !ok {
				first = g.made[rng.IntN(len(g.made))]
			}
			c.ParentHashes = []plumbing.Hash{first.Hash}
			if other, ok := heads[rng.IntN(4)]; ok && other != first && rng.IntN(3) == 0 {
				c.ParentHashes = append(c.ParentHashes, other.Hash)
			}
		}
		heads[br] = c
		g.byHash[c.Hash] = c
		g.made = append(g.made, c)
	}
	return g
}

func (g *graph) get(h plumbing.Hash) (*object.Commit, error) {
	if c, ok := g.byHash[h]; ok {
		return c, nil
	}
	return nil, plumbing.ErrObjectNotFound
}

// reach is every commit c reaches, itself included.
func (g *graph) reach(c *object.Commit, into map[plumbing.Hash]bool) {
	stack := []*object.Commit{c}
	for len(stack) > 0 {
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if into[c.Hash] {
			continue
		}
		into[c.Hash] = true
		for _, p := range c.ParentHashes {
			stack = append(stack, g.byHash[p])
		}
	}
}

// only is the answer by sets: what tip reaches and no base does, newest
// committer time first, ties by hash.
func (g *graph) only(tip *object.Commit, bases []*object.Commit) []string {
	in, out := map[plumbing.Hash]bool{}, map[plumbing.Hash]bool{}
	g.reach(tip, in)
	for _, b := range bases {
		g.reach(b, out)
	}
	var q revwalk.Queue
	for h := range in {
		if !out[h] {
			q = append(q, g.byHash[h])
		}
	}
	slices.SortFunc(q, func(a, b *object.Commit) int {
		if q := (revwalk.Queue{a, b}); q.Less(0, 1) {
			return -1
		}
		return 1
	})
	return messages(q)
}

func messages(cs []*object.Commit) []string {
	out := []string{}
	for _, c := range cs {
		out = append(out, c.Message)
	}
	return out
}

// Without skewed clocks Only lists exactly the commits the tip reaches
// and no base does, in date order; with skew within the slop, the same
// commits. Bases: none, one, and two.
func TestOnlyIsTheSetDifference(t *testing.T) {
	for seed := range uint64(8) {
		for _, skew := range []bool{false, true} {
			rng := rand.New(rand.NewPCG(seed, 3))
			g := randomGraph(rng, 150, skew)
			for range 40 {
				tip := g.made[rng.IntN(len(g.made))]
				var bases []*object.Commit
				for range rng.IntN(3) {
					bases = append(bases, g.made[rng.IntN(len(g.made))])
				}
				w := &revwalk.Walk{Get: g.get, Limit: 1000}
				got, truncated, err := w.Only(context.Background(), tip, bases...)
				if err != nil || truncated {
					t.Fatalf("seed %d: Only(%s, %v): truncated %v, %v", seed, tip.Message, messages(bases), truncated, err)
				}
				want := g.only(tip, bases)
				gotMsgs := messages(got)
				if skew {
					slices.Sort(gotMsgs)
					slices.Sort(want)
				}
				if !slices.Equal(gotMsgs, want) {
					t.Fatalf("seed %d skew %v: Only(%s, %v) = %v, want %v", seed, skew, tip.Message, messages(bases), gotMsgs, want)
				}
				if w.Reads > len(g.made) {
					t.Errorf("seed %d: %d reads of a %d-commit history", seed, w.Reads, len(g.made))
				}
			}
		}
	}
}

// A line of n commits: the tip, each commit's parent the one made before.
func line(n int) *graph {
	g := &graph{byHash: map[plumbing.Hash]*object.Commit{}}
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		c := &object.Commit{Hash: plumbing.Hash(sha1.Sum(fmt.Appendf(nil, "l%d", i))), Message: fmt.Sprintf("l%d", i),
			Committer: object.Signature{When: t0.Add(time.Duration(i) * time.Minute)}}
		if i > 0 {
			c.ParentHashes = []plumbing.Hash{g.made[i-1].Hash}
		}
		g.byHash[c.Hash] = c
		g.made = append(g.made, c)
	}
	return g
}

// The walk reads from the tip down to a little past the base, not the
// history below it; at Limit it stops and says so; the reads a caller
// made through Commit count.
func TestOnlyReadsLittleAndStopsAtLimit(t *testing.T) {
	g := line(1000)
	tip, base := g.made[999], g.made[990]
	w := &revwalk.Walk{Get: g.get, Limit: 1000}
	got, truncated, err := w.Only(context.Background(), tip, base)
	if err != nil || truncated || len(got) != 9 {
		t.Fatalf("Only(l999, l990) = %v, truncated %v, %v; want l999..l991", messages(got), truncated, err)
	}
	if w.Reads > 20 {
		t.Errorf("%d commits read for a merge of 9 commits, want a few past the base", w.Reads)
	}

	w = &revwalk.Walk{Get: g.get, Limit: 5}
	if _, err := w.Commit(tip.Hash); err != nil {
		t.Fatal(err)
	}
	got, truncated, err = w.Only(context.Background(), tip)
	if err != nil || !truncated || len(got) != 4 || w.Reads != 5 {
		t.Fatalf("with Limit 5 and one read made: %v, truncated %v, %d reads, %v; want 4 commits, truncated, 5 reads",
			messages(got), truncated, w.Reads, err)
	}
}

func TestOnlyStopsOnContextAndReadErrors(t *testing.T) {
	g := line(10)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	w := &revwalk.Walk{Get: g.get, Limit: 100}
	if _, _, err := w.Only(ctx, g.made[9]); !errors.Is(err, context.Canceled) {
		t.Errorf("Only with a cancelled context: %v, want context.Canceled", err)
	}
	delete(g.byHash, g.made[5].Hash)
	w = &revwalk.Walk{Get: g.get, Limit: 100}
	if _, _, err := w.Only(context.Background(), g.made[9]); !errors.Is(err, plumbing.ErrObjectNotFound) {
		t.Errorf("Only over a missing commit: %v, want ErrObjectNotFound", err)
	}
}
