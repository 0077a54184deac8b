package gitrepo

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestMergeBasesMovingTargetMatchGit: the merge bases found from a
// target's kept ancestor set (history/ancestors.go) are `git merge-base
// --all`'s, on random histories with criss-cross merges, as the target
// moves forward along main, jumps back (a forced push), or is another
// branch now and then — and the set does serve most of the questions.
func TestMergeBasesMovingTargetMatchGit(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			f := newFixture(t)
			rng := rand.New(rand.NewPCG(seed, 11))
			const n = 60
			specs := make([]commitSpec, n)
			var mains []int // main's commits, in order: each the first parent of the next
			for i := range specs {
				specs[i] = commitSpec{ref: fmt.Sprintf("c%d", i), files: map[string]file{"f": reg(fmt.Sprint(i))}}
				switch {
				case i == 0 || i == 1: // two roots: some pairs have no common history
				case i%2 == 0: // main moves: a merge of an earlier commit, or a commit
					specs[i].parents = []string{specs[mains[len(mains)-1]].ref}
					if rng.IntN(2) == 0 {
						specs[i].parents = append(specs[i].parents, specs[rng.IntN(i)].ref)
					}
				case rng.IntN(3) == 0: // a side branch's merge (criss-crosses)
					a, b := rng.IntN(i), rng.IntN(i)
					for b == a {
						b = rng.IntN(i)
					}
					specs[i].parents = []string{specs[a].ref, specs[b].ref}
				default:
					specs[i].parents = []string{specs[rng.IntN(i)].ref}
				}
				if i%2 == 0 {
					mains = append(mains, i)
				}
			}
			shas := f.build(specs...)
			defer f.repo.store.Session()()
			const asks = 150
			at, multi := 0, 0
			for range asks {
				var a int
				switch r := rng.IntN(10); {
				case r < 7: // main moved on, or not
					at = min(at+rng.IntN(3), len(mains)-1)
					a = mains[at]
				case r < 8: // main forced back
					at = rng.IntN(len(mains))
					a = mains[at]
				default: // another target branch
					a = rng.IntN(n)
				}
				b := rng.IntN(n)
				got, want := f.mergeBases(f.commit(shas[specs[a].ref]), f.commit(shas[specs[b].ref]))
				if !slices.Equal(got, want) {
					t.Errorf("merge bases of c%d and c%d: got %v, git %v", a, b, got, want)
				}
				if len(want) > 1 {
					multi++
				}
			}
			hits := f.repo.history.AncestorSetHits()
			t.Logf("%d of %d asks had several merge bases; %d served by an ancestor set", multi, asks, hits)
			if hits < asks/3 {
				t.Errorf("ancestor sets served %d of %d asks; want most of main's", hits, asks)
			}
		})
	}
}
