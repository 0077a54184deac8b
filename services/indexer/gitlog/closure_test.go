package gitlog

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prsaga/prsaga/platform/gittest"
)

// randomHistory is a history of n commits on a few branches that fork,
// merge each other and land on main, with committer dates that mostly
// grow and sometimes go back (skewed clocks), each date distinct (git
// breaks ties of dates by insertion order, the walk by hash). Each
// commit's message is its name.
func randomHistory(rng *rand.Rand, n int) []gittest.Commit {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	used := map[int]bool{}
	date := func(i int) time.Time {
		m := 10 * i
		if rng.IntN(8) == 0 {
			m -= rng.IntN(25) // skewed by up to two and a half commits: within the walk's slop
		}
		for used[m] {
			m++
		}
		used[m] = true
		return t0.Add(time.Duration(m) * time.Minute)
	}
	branches := []string{"main", "b1", "b2", "b3"}
	heads := map[string]string{"main": "c0"}
	cs := []gittest.Commit{{Name: "c0", Branch: "main", Message: "c0", At: date(0)}}
	for i := 1; i < n; i++ {
		name := fmt.Sprintf("c%d", i)
		br := branches[rng.IntN(len(branches))]
		first, ok := heads[br]
		if !ok {
			// A new branch forks from some earlier commit.
			first = cs[rng.IntN(len(cs))].Name
		}
		parents := []string{first}
		if other := branches[rng.IntN(len(branches))]; other != br && heads[other] != "" && heads[other] != first && rng.IntN(3) == 0 {
			parents = append(parents, heads[other])
		}
		cs = append(cs, gittest.Commit{Name: name, Branch: br, Parents: parents, Message: name, At: date(i)})
		heads[br] = name
		if br != "main" && rng.IntN(6) == 0 {
			delete(heads, br) // the branch is done; it starts again elsewhere
		}
	}
	return cs
}

// Merged and MergedSince answer what `git rev-list tip ^base` lists, in its
// order, for every merge of random histories, asked in order (the closure
// moving along main) and out of order (the closure refusing and the walk
// answering), with a closure limit small enough to be hit.
func TestMergedMatchesRevList(t *testing.T) {
	gittest.Need(t)
	for seed := range uint64(6) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 19))
			root := t.TempDir()
			history := randomHistory(rng, 120)
			repo := gittest.NewBare(t, root, "acme/r", history...)
			byName := map[string]gittest.Commit{}
			for _, c := range history {
				byName[c.Name] = c
			}
			message := map[string]string{}
			for name, sha := range repo.SHA {
				message[sha] = name
			}
			want := func(tip, base string) []string {
				var out []string
				for _, sha := range strings.Fields(repo.Git("rev-list", tip, "^"+base)) {
					out = append(out, message[sha])
				}
				return out
			}
			type ask struct{ tip, base string } // names; base "" is the first parent
			var asks []ask
			for _, c := range history {
				if len(c.Parents) > 0 {
					asks = append(asks, ask{c.Name, ""})
				}
			}
			inOrder := slices.Clone(asks)
			rng.Shuffle(len(asks), func(i, j int) { asks[i], asks[j] = asks[j], asks[i] })
			for range 20 {
				asks = append(asks, ask{history[rng.IntN(len(history))].Name, history[rng.IntN(len(history))].Name})
			}
			for _, limit := range []int{maxClosure, 30} {
				r, err := New(root)
				if err != nil {
					t.Fatal(err)
				}
				r.maxClosure = limit
				for _, a := range append(inOrder, asks...) {
					tip := repo.SHA[a.tip]
					base := byName[a.tip].Parents
					var m, baseSHA = "", ""
					if a.base != "" {
						baseSHA = repo.SHA[a.base]
						m = a.base
					} else {
						m = base[0]
					}
					got, err := r.MergedSince(t.Context(), "acme/r", tip, baseSHA)
					if err != nil {
						t.Fatalf("%s ^%s: %v", a.tip, m, err)
					}
					if w := want(tip, repo.SHA[m]); !slices.Equal(got.Messages, w) || got.Truncated {
						t.Fatalf("limit %d: %s ^%s = %q (truncated %v)\ngit rev-list: %q", limit, a.tip, m, got.Messages, got.Truncated, w)
					}
				}
			}
		})
	}
}

// A merge whose PR forked at the root reads only what is new since the
// last merge once the closure follows main: the commits read per call do
// not grow with the history (W2's shape).
func TestClosureReadsOnlyWhatIsNew(t *testing.T) {
	gittest.Need(t)
	root := t.TempDir()
	const depth = 60
	repo := gittest.NewBare(t, root, "bench/r", w2History(depth)...)
	r, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	rp := r.open(r.mustPath(t, "bench/r"))
	var reads int
	for i := range depth {
		before := r.commits.misses
		m, err := r.Merged(t.Context(), "bench/r", repo.SHA[fmt.Sprintf("m%d", i)])
		if err != nil || len(m.Messages) != 2 {
			t.Fatalf("m%d: %q, %v; want the merge and its PR commit", i, m.Messages, err)
		}
		reads = r.commits.misses - before
		if i > 0 && reads > 1 {
			t.Errorf("m%d: %d commits read besides the tip; want 1 (the PR's)", i, reads)
		}
	}
	if rp.closure == nil || len(rp.closure.set) != 2*depth+1 {
		t.Errorf("closure of %v commits; want main's %d", rp.closure, 2*depth+1)
	}
}

func (r *Reader) mustPath(t *testing.T, repo string) string {
	t.Helper()
	dir, err := r.path(repo)
	if err != nil {
		t.Fatal(err)
	}
	return dir
}
