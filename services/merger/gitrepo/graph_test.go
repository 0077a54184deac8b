package gitrepo

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
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
			defer f.repo.session()()
			multi := 0
			for range 60 {
				a, b := specs[rng.IntN(n)].ref, specs[rng.IntN(n)].ref
				ca, err := f.repo.commit(plumbing.NewHash(shas[a]))
				if err != nil {
					t.Fatal(err)
				}
				cb, err := f.repo.commit(plumbing.NewHash(shas[b]))
				if err != nil {
					t.Fatal(err)
				}
				got, err := f.repo.mergeBases(ca, cb)
				if err != nil {
					t.Fatal(err)
				}
				out, _ := f.gitErr("", "", "merge-base", "--all", shas[a], shas[b]) // exit 1: no common history
				want := strings.Fields(out)
				goGit, err := f.repo.fallbackMergeBases(ca, cb, errGraphTooLarge)
				if err != nil {
					t.Fatal(err)
				}
				if g, w, gg := hashes(got), sorted(want), hashes(goGit); !slices.Equal(g, w) || !slices.Equal(g, gg) {
					t.Errorf("merge bases of %s and %s: got %v, git %v, go-git %v", a, b, g, w, gg)
				}
				if len(want) > 1 {
					multi++
				}
			}
			t.Logf("%d of 60 pairs had several merge bases", multi)
		})
	}
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

// TestTrailerIndexAfterOthersMoveTheBranch: the trailer index finds the
// PR's merge after other writers moved the branch on (its new commits are
// added to the graph), finds a trailer commit someone else made, and does
// not take a quoted trailer for one.
func TestTrailerIndexAfterOthersMoveTheBranch(t *testing.T) {
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

	// A commit made elsewhere with PR 43's trailer in its last paragraph,
	// and one quoting PR 44's trailer in its body only.
	f.build(
		commitSpec{ref: "main", parents: []string{"main"}, files: nestedOurs, msg: "outside merge\n\nPrsaga-PR: acme/widgets#43\n"},
		commitSpec{ref: "main", parents: []string{"main"}, files: nestedOurs, msg: "quote\n\nPrsaga-PR: acme/widgets#44\n\nnot a trailer"},
	)
	f.git("", "update-ref", "refs/heads/pr43", feature)
	res := f.merge(request("pr43", "main", feature, StrategyMerge, 43))
	if !res.AlreadyMerged {
		t.Errorf("PR 43 = %+v; want AlreadyMerged (its trailer is on main)", res)
	}
	f.git("", "update-ref", "refs/heads/pr44", f.pushCommit("feature", "pr44.txt"))
	res = f.merge(request("pr44", "main", f.rev("pr44"), StrategyMerge, 44))
	if res.AlreadyMerged {
		t.Errorf("PR 44 = %+v; a quoted trailer is not a merge", res)
	}
}

// TestMergeWithoutGraph: a history beyond the graph's bound is served by
// the plain walks, with the same results.
func TestMergeWithoutGraph(t *testing.T) {
	f := newFixture(t)
	_, feature := buildNested(f)
	f.repo.graph = &commitGraph{tooLarge: true}
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

func TestTrailerValuesMatchHasTrailer(t *testing.T) {
	msgs := []string{
		"",
		"subject",
		"Merge\n\nPrsaga-PR: a/b#1\n",
		"Merge\n\nPrsaga-PR: a/b#1\r\nPrsaga-Correlation-Id: x\r\n",
		"Merge\n\nPrsaga-PR: a/b#1  \t\n\n\n",
		"Merge\n\nPrsaga-PR: a/b#1\n\nbody after",
		"Prsaga-PR: a/b#2",
		"x\n\nPrsaga-PR: a/b#3\nPrsaga-PR: a/b#4\nPrsaga-PR:a/b#5\nprsaga-pr: a/b#6\n Prsaga-PR: a/b#7",
		"x\n\nPrsaga-PR: \n",
		"x\n\nPrsaga-PR: a b  c \n",
	}
	candidates := []string{"", "a/b#1", "a/b#2", "a/b#3", "a/b#4", "a/b#5", "a/b#6", "a/b#7", "a b  c", "a b  c "}
	for _, msg := range msgs {
		values := trailerValues(msg, TrailerPR)
		for _, v := range append(candidates, values...) {
			if has, in := hasTrailer(msg, TrailerPR, v), slices.Contains(values, v); has != in {
				t.Errorf("message %q, value %q: hasTrailer %v, trailerValues %q", msg, v, has, values)
			}
		}
	}
}
