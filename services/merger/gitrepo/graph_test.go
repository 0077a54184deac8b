package gitrepo

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/prsaga/prsaga/services/merger/gitrepo/history"
)

// TestMergeBasesMatchGit: on random histories full of merges (criss-cross
// ones included), the graph's merge bases are `git merge-base --all`'s and
// go-git's, for every pair asked — with the graph grown incrementally, pair
// after pair, as merges grow it.
func TestMergeBasesMatchGit(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			f := newFixture(t)
			rng := rand.New(rand.NewPCG(seed, 7))
			const n = 40
			specs := make([]commitSpec, n)
			for i := range specs {
				specs[i] = commitSpec{ref: fmt.Sprintf("c%d", i), files: map[string]file{"f": reg(fmt.Sprint(i))}}
				switch {
				case i == 0 || i == 1: // two roots: some pairs have no common history
				case rng.IntN(3) == 0 && i > 2:
					a, b := rng.IntN(i), rng.IntN(i)
					for b == a {
						b = rng.IntN(i)
					}
					specs[i].parents = []string{specs[a].ref, specs[b].ref}
				default:
					specs[i].parents = []string{specs[max(0, i-1-rng.IntN(4))].ref}
				}
			}
			shas := f.build(specs...)
			defer f.repo.store.Session()()
			multi := 0
			for range 60 {
				a, b := specs[rng.IntN(n)].ref, specs[rng.IntN(n)].ref
				ca, cb := f.commit(shas[a]), f.commit(shas[b])
				g, w := f.mergeBases(ca, cb)
				goGit, err := f.repo.history.FallbackMergeBases(ca, cb, history.ErrGraphTooLarge)
				if err != nil {
					t.Fatal(err)
				}
				if gg := hashes(goGit); !slices.Equal(g, w) || !slices.Equal(g, gg) {
					t.Errorf("merge bases of %s and %s: got %v, git %v, go-git %v", a, b, g, w, gg)
				}
				if len(w) > 1 {
					multi++
				}
			}
			t.Logf("%d of 60 pairs had several merge bases", multi)
		})
	}
}

// commit is the commit sha names, read from the repository's store.
func (f *fixture) commit(sha string) *object.Commit {
	f.t.Helper()
	c, err := f.repo.store.Commit(plumbing.NewHash(sha))
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}

// mergeBases returns the merge bases of a and b that the history finds and
// those of `git merge-base --all`, both as sorted ids.
func (f *fixture) mergeBases(a, b *object.Commit) (got, git []string) {
	f.t.Helper()
	bases, err := f.repo.history.MergeBases(context.Background(), a, b)
	if err != nil {
		f.t.Fatal(err)
	}
	out, _ := f.gitErr("", "", "merge-base", "--all", a.Hash.String(), b.Hash.String()) // exit 1: no common history
	return hashes(bases), sorted(strings.Fields(out))
}

func hashes(cs []*object.Commit) []string {
	var s []string
	for _, c := range cs {
		s = append(s, c.Hash.String())
	}
	return sorted(s)
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// TestRecordedMergeAfterOthersMoveTheBranch: a redelivery finds the PR's
// recorded merge after other writers moved the branch on (their commits
// are added to the graph); a commit someone else made with a PR's trailer
// in its last paragraph is not that PR's merge.
func TestRecordedMergeAfterOthersMoveTheBranch(t *testing.T) {
	f := newFixture(t)
	_, feature := buildNested(f)
	req := request("feature", "main", feature, StrategyMerge, 42)
	first := f.merge(req)
	f.pushCommit("main", "after1.txt")
	f.pushCommit("main", "after2.txt")
	again := f.merge(req)
	if !again.AlreadyMerged || again.MergeSHA != first.MergeSHA {
		t.Fatalf("redelivery after pushes = %+v; want AlreadyMerged at %s", again, first.MergeSHA)
	}

	// A commit made elsewhere with PR 43's trailer in its last paragraph.
	f.build(commitSpec{ref: "main", parents: []string{"main"}, files: nestedOurs, msg: "outside merge\n\nPrsaga-PR: acme/widgets#43\n"})
	f.git("", "update-ref", "refs/heads/pr43", f.pushCommit("feature", "pr43.txt"))
	res := f.merge(request("pr43", "main", f.rev("pr43"), StrategyMerge, 43))
	if res.AlreadyMerged {
		t.Errorf("PR 43 = %+v; a trailer someone wrote is not a merge", res)
	}
}

// TestMergeWithoutGraph: a history beyond the graph's bound is served by
// the plain walks, with the same results.
func TestMergeWithoutGraph(t *testing.T) {
	f := newFixture(t)
	_, feature := buildNested(f)
	f.repo.history.Disable()
	req := request("feature", "main", feature, StrategyMerge, 42)
	first := f.merge(req)
	if first.AlreadyMerged {
		t.Fatalf("first merge = %+v", first)
	}
	if wantTree, _ := f.mergeTree(first.BaseSHA, feature); f.rev("main^{tree}") != wantTree {
		t.Error("the merge's tree is not git's")
	}
	again := f.merge(req)
	if !again.AlreadyMerged || again.MergeSHA != first.MergeSHA {
		t.Errorf("redelivery = %+v; want AlreadyMerged at %s", again, first.MergeSHA)
	}
	f.fsck()
}
