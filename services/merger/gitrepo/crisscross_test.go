package gitrepo

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestMergeCrissCrossMatchesGit merges random criss-cross histories — two
// branches that each merged the other's first commit, so that the final
// merge has two merge bases — with Merge and with git merge-tree. The
// files are lists of lines ("slots"); each commit changes some slots, the
// two inner merges resolve slots both changed differently, each its own
// way. Where the two merge bases merge cleanly git's virtual base is an
// ordinary tree and Merge must reach git's result; where they conflict,
// Merge refuses, naming the case. Never a different tree; never a clean
// merge where git conflicts.
func TestMergeCrissCrossMatchesGit(t *testing.T) {
	t.Run("cached", func(t *testing.T) { crissCrossMatchesGit(t, 0) })
	// With a cache too small to keep anything, the virtual base's trees and
	// blobs, which are never written, are read from the merge's overlay.
	t.Run("cold", func(t *testing.T) { crissCrossMatchesGit(t, 1) })
}

// crissCrossMatchesGit merges generated criss-cross histories with a
// cache of cacheBytes (0: the default) and compares with git.
func crissCrossMatchesGit(t *testing.T, cacheBytes int64) {
	const n = 60
	rnd := rand.New(rand.NewPCG(20251201, 2))
	files := []string{"a.txt", "b.txt", "d/c.txt"}
	const slots = 12
	type tree map[string][]string
	render := func(tr tree, exec map[string]bool) map[string]file {
		out := map[string]file{"keep": reg("keep\n")}
		for p, ls := range tr {
			fl := reg(strings.Join(ls, ""))
			if exec[p] {
				fl = exe(fl.content)
			}
			out[p] = fl
		}
		return out
	}
	clone := func(tr tree) tree {
		c := tree{}
		for p, ls := range tr {
			c[p] = append([]string(nil), ls...)
		}
		return c
	}
	counter := 0
	edit := func(tr tree, who string, k int) map[string]int {
		changed := map[string]int{}
		for range k {
			p := files[rnd.IntN(len(files))]
			i := rnd.IntN(slots)
			counter++
			tr[p][i] = fmt.Sprintf("%s slot %d by %s #%d\n", p, i, who, counter)
			changed[fmt.Sprintf("%s:%d", p, i)]++
		}
		return changed
	}
	var specs []commitSpec
	for c := range n {
		base := tree{}
		for _, p := range files {
			for i := range slots {
				base[p] = append(base[p], fmt.Sprintf("%s slot %d base of case %d\n", p, i, c))
			}
		}
		x1, y1 := clone(base), clone(base)
		edit(x1, "x1", 1+rnd.IntN(2))
		edit(y1, "y1", 1+rnd.IntN(2))
		// The inner merges: each side's changes, the other side's, and for
		// slots both changed, x keeps x1's, y keeps y1's (or, now and then,
		// both agree) — plus one change of its own.
		agree := rnd.IntN(2) == 0
		x, y := clone(x1), clone(y1)
		for _, p := range files {
			for i := range slots {
				bx, by := x1[p][i] != base[p][i], y1[p][i] != base[p][i]
				switch {
				case by && !bx:
					x[p][i] = y1[p][i]
				case bx && !by:
					y[p][i] = x1[p][i]
				case bx && by && agree:
					y[p][i] = x1[p][i]
				}
			}
		}
		edit(x, "x", rnd.IntN(2))
		edit(y, "y", rnd.IntN(2))
		execX := map[string]bool{}
		if rnd.IntN(6) == 0 {
			execX[files[0]] = true
		}
		pre := fmt.Sprintf("cc%d-", c)
		specs = append(specs,
			commitSpec{ref: pre + "base", files: render(base, nil)},
			commitSpec{ref: pre + "x1", parents: []string{pre + "base"}, files: render(x1, nil)},
			commitSpec{ref: pre + "y1", parents: []string{pre + "base"}, files: render(y1, nil)},
			commitSpec{ref: pre + "x", parents: []string{pre + "x1", pre + "y1"}, files: render(x, execX)},
			commitSpec{ref: pre + "y", parents: []string{pre + "y1", pre + "x1"}, files: render(y, nil)},
		)
	}
	f := newFixture(t)
	if cacheBytes != 0 {
		repos, err := NewReposWithOptions(f.root, Options{CacheBytes: cacheBytes})
		if err != nil {
			t.Fatal(err)
		}
		if f.repo, err = repos.Open(testRepo); err != nil {
			t.Fatal(err)
		}
	}
	shas := f.build(specs...)
	var same, refusedInner, refusedOther, bothConflict int
	for c := range n {
		pre := fmt.Sprintf("cc%d-", c)
		if bases := f.git("", "merge-base", "--all", shas[pre+"x"], shas[pre+"y"]); len(strings.Fields(bases)) != 2 {
			t.Fatalf("case %d: merge bases %q, want two", c, bases)
		}
		gitTree, gitClean := f.mergeTree(shas[pre+"x"], shas[pre+"y"])
		merged, reason := f.mergeAgainstGit(fmt.Sprintf("case %d", c), request(pre+"y", pre+"x", shas[pre+"y"], StrategyMerge, c+1), gitTree, gitClean)
		switch {
		case merged:
			same++
		case !gitClean:
			bothConflict++
		case strings.Contains(reason, "criss-cross history: its 2 merge bases"):
			refusedInner++
		default:
			refusedOther++
			t.Logf("case %d: refused where git merges: %s", c, reason)
		}
	}
	t.Logf("%d criss-cross histories: %d merged as git, %d conflicts for both, %d refused (bases conflict), %d refused otherwise",
		n, same, bothConflict, refusedInner, refusedOther)
	if same < n/4 {
		t.Errorf("only %d of %d criss-cross histories merged; the virtual base is not used", same, n)
	}
	if refusedInner == 0 {
		t.Errorf("no history had merge bases that conflict; the generator no longer covers the refusal")
	}
	f.fsck()
}

// TestSquashCrissCross: a squash of a criss-cross history has the merge's
// tree (through the virtual base) and lists the commits `git log
// target..head` lists — not those one merge base alone excludes.
func TestSquashCrissCross(t *testing.T) {
	f := newFixture(t)
	r := map[string]file{"r": reg("1\n2\n3\n4\n5\n6\n")}
	shas := f.build(
		commitSpec{ref: "main", files: r, msg: "base"},
		commitSpec{ref: "x1", parents: []string{"main"}, files: with(r, map[string]file{"x": reg("x\n")}), msg: "x1"},
		commitSpec{ref: "y1", parents: []string{"main"}, files: with(r, map[string]file{"y": reg("y\n")}), msg: "y1"},
		commitSpec{ref: "x", parents: []string{"x1", "y1"}, files: with(r, map[string]file{"x": reg("x\n"), "y": reg("y\n")}), msg: "x merges y1"},
		commitSpec{ref: "y", parents: []string{"y1", "x1"}, files: with(r, map[string]file{"x": reg("x\n"), "y": reg("y\n")}), msg: "y merges x1"},
		commitSpec{ref: "y", parents: []string{"y"}, files: map[string]file{"r": reg("1\n2\n3\n4\n5\n6!\n"), "x": reg("x\n"), "y": reg("y\n")}, msg: "y2"},
		commitSpec{ref: "x", parents: []string{"x"}, files: map[string]file{"r": reg("1!\n2\n3\n4\n5\n6\n"), "x": reg("x\n"), "y": reg("y\n")}, msg: "x2"},
	)
	wantTree, clean := f.mergeTree(shas["x"], shas["y"])
	if !clean {
		t.Fatal("git does not merge the criss-cross cleanly")
	}
	res := f.merge(request("y", "x", shas["y"], StrategySquash, 7))
	if got := f.rev(res.MergeSHA + "^{tree}"); got != wantTree {
		t.Errorf("squash tree = %s, git merge-tree writes %s", got, wantTree)
	}
	want := f.git("", "log", "--reverse", "--format=* %s", shas["x"]+".."+shas["y"])
	if msg := f.commitMessage(res.MergeSHA); !strings.Contains(msg, "\n\n"+want+"\n\n") {
		t.Errorf("message:\n%s\nwant the subjects:\n%s", msg, want)
	}
}
