package gitrepo

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
)

// The universe of paths random scenarios draw from: up to three directories
// deep, with names that are files in some trees and directories in others
// ("a/b", "d/e", "g"), so that file/directory changes happen too.
var (
	sharedPaths = []string{"f1", "f2", "a/f1", "a/b/f1", "a/b/c/f1", "a/b/c/f2", "a/b", "d/f1", "d/e/f1", "d/e/f2", "d/e", "g/f1", "g"}
	// For disjoint scenarios the target only touches oursPaths and the PR
	// only theirsPaths, two separate subtrees.
	oursPaths   = []string{"f1", "a/f1", "a/f2", "a/b/f1", "a/b/c/f1", "a/b/c/f2", "a/b", "a/x/y/z"}
	theirsPaths = []string{"f2", "d/f1", "d/e/f1", "d/e/f2", "d/e", "g/f1", "g", "d/n/m"}
)

// TestMergeDifferentialTreeShapes merges randomly generated tree shapes
// (seeded, so a failure reproduces) with Merge and with git merge-tree:
// files that become directories and back, symlinks, modes, renames, whole
// files replaced. The property: a clean merge has exactly git's tree, and git
// agrees it is clean; a merge of disjoint changes is always clean. Conflicts
// where git succeeds (renames, removed directories) are allowed here; line
// edits are TestMergeDifferential's. GITREPO_DIFF_N=3000 runs a longer sweep.
func TestMergeDifferentialTreeShapes(t *testing.T) {
	n := 36
	if s := os.Getenv("GITREPO_DIFF_N"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	const seed = 20250601
	var scs []scenario
	var disjoint []bool
	for i := range n {
		rnd := rand.New(rand.NewPCG(seed, uint64(i)))
		g := &generator{rnd: rnd, id: i}
		base := g.tree(append(append([]string{}, sharedPaths...), oursPaths...), 0.5)
		sc := scenario{name: fmt.Sprintf("scenario %d", i), base: base}
		if i%3 == 0 {
			sc.ours = g.mutate(base, oursPaths, "ours")
			sc.theirs = g.mutate(base, theirsPaths, "theirs")
		} else {
			sc.ours = g.mutate(base, sharedPaths, "ours")
			sc.theirs = g.mutate(base, sharedPaths, "theirs")
		}
		scs = append(scs, sc)
		disjoint = append(disjoint, i%3 == 0)
	}

	f := newFixture(t)
	var same, conservative, bothConflict int
	for i, o := range runScenarios(f, scs) {
		name := fmt.Sprintf("%s (seed %d)", scs[i].name, seed)
		ok := checkNeverWrong(t, name, o)
		switch {
		case o.tree != "":
			same++
		case o.gitClean:
			conservative++
			if disjoint[i] {
				t.Errorf("%s: disjoint changes conflict: %v", name, o.conflict)
			}
			t.Logf("%s: conflict where git is clean: %v", name, o.conflict)
		default:
			bothConflict++
		}
		if !ok {
			msg, _ := f.gitErr("", "", "merge-tree", "--write-tree", fmt.Sprintf("s%d-ours^1", i), fmt.Sprintf("s%d-theirs", i))
			t.Logf("git merge-tree says:\n%s", msg)
			t.Logf("%s:\n base   %v\n ours   %v\n theirs %v", name, scs[i].base, scs[i].ours, scs[i].theirs)
		}
	}
	t.Logf("%d scenarios: %d clean and identical to git, %d conflicts where git is clean, %d conflicts for both",
		n, same, conservative, bothConflict)
	if same < n/3 {
		t.Errorf("only %d of %d scenarios merged cleanly; the generator no longer exercises clean merges", same, n)
	}
	f.fsck()
}

// generator makes random trees and random changes to them. Contents are
// unique per version, so that git finds no accidental renames between
// unrelated files.
type generator struct {
	rnd *rand.Rand
	id  int
	n   int
}

func (g *generator) content(p, who string) file {
	g.n++
	c := fmt.Sprintf("%s %s v%d of scenario %d\n%s", p, who, g.n, g.id, strings.Repeat("x", g.rnd.IntN(40)))
	switch r := g.rnd.IntN(20); {
	case r == 0:
		return link("target-" + c[:8])
	case r < 3:
		return exe(c)
	}
	return reg(c)
}

// tree picks each path with probability p, skipping paths that collide
// (as file and directory) with ones already picked.
func (g *generator) tree(paths []string, p float64) map[string]file {
	t := map[string]file{}
	for _, path := range paths {
		if g.rnd.Float64() < p && !collides(t, path) {
			t[path] = g.content(path, "base")
		}
	}
	return t
}

// mutate applies 1–6 random changes to a copy of base, touching only paths.
func (g *generator) mutate(base map[string]file, paths []string, who string) map[string]file {
	t := with(base, nil)
	for range 1 + g.rnd.IntN(6) {
		p := paths[g.rnd.IntN(len(paths))]
		cur, ok := t[p]
		switch {
		case !ok && collides(t, p):
			if g.rnd.IntN(2) == 0 { // replace a file by a directory or back
				for q := range t {
					if isUnder(q, p) || isUnder(p, q) {
						delete(t, q)
					}
				}
				t[p] = g.content(p, who)
			}
		case !ok:
			t[p] = g.content(p, who)
		default:
			switch g.rnd.IntN(4) {
			case 0:
				delete(t, p)
			case 1: // a mode change only
				if cur.mode == "100644" {
					t[p] = file{"100755", cur.content}
				} else if cur.mode == "100755" {
					t[p] = file{"100644", cur.content}
				}
			case 2: // a rename, when there is somewhere to go
				q := paths[g.rnd.IntN(len(paths))]
				if _, taken := t[q]; !taken && !collides(t, q) {
					delete(t, p)
					if !collides(t, q) {
						t[q] = cur
					} else {
						t[p] = cur
					}
				}
			default:
				t[p] = g.content(p, who)
			}
		}
	}
	return t
}

// collides reports whether p cannot be added to t: a file of t is a
// directory of p, or p is a directory of a file of t.
func collides(t map[string]file, p string) bool {
	for q := range t {
		if isUnder(q, p) || isUnder(p, q) {
			return true
		}
	}
	return false
}

// isUnder reports whether path p lies inside directory dir.
func isUnder(p, dir string) bool { return strings.HasPrefix(p, dir+"/") }
