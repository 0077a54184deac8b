package gitrepo

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/prsaga/prsaga/services/merger/gitrepo/engine"
)

// The differential test of the merge against git: random histories, each
// merged by Merge and by `git merge-tree --write-tree`.
//
//	go test ./gitrepo -run TestMergeDifferential -gitrepo.cases=5000 -gitrepo.seed=7
//
// (or GITREPO_CASES / GITREPO_SEED) runs a longer sweep.
var (
	diffCases = flag.Int("gitrepo.cases", envInt("GITREPO_CASES", 500), "random histories TestMergeDifferential merges")
	diffSeed  = flag.Uint64("gitrepo.seed", uint64(envInt("GITREPO_SEED", 20250601)), "seed of TestMergeDifferential")
)

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return n
	}
	return def
}

// minAgreement is the share of git's clean merges Merge must also merge
// cleanly, on histories without renames.
const minAgreement = 0.98

// TestMergeDifferential generates random histories — files added, changed
// and deleted on either side; line edits that overlap, touch or are apart
// within the same file; the same edit on both sides; empty files; a last
// line losing or gaining its newline; the executable bit; files with some
// repeated lines, where diffs can align differently — and merges each with Merge (as a merge or a squash, and as
// a fast-forward where the target has not moved) and with git merge-tree.
//
// Properties: whenever Merge merges cleanly, git does too, and the tree is
// git's to the id; whenever git reports a conflict, so does Merge. A squash
// has the merge's tree and one parent; a fast-forward lands exactly on the
// PR head. And Merge merges at least minAgreement of the histories git
// merges cleanly (the generator makes no renames, which Merge refuses).
func TestMergeDifferential(t *testing.T) {
	n, seed := *diffCases, *diffSeed
	var scs []scenario
	for i := range n {
		g := &historyGen{rnd: rand.New(rand.NewPCG(seed, uint64(i))), id: i}
		scs = append(scs, g.scenario())
	}
	f := newFixture(t)
	shas := buildScenarios(f, scs)

	var gitClean, bothClean, conflictsBoth, fastForwards, lineMerges int
	for i, sc := range scs {
		name := fmt.Sprintf("case %d (seed %d)", i, seed)
		ours, theirs := fmt.Sprintf("s%d-ours", i), fmt.Sprintf("s%d-theirs", i)
		gitTree, clean := f.mergeTree(shas[ours], shas[theirs])
		strategy := StrategyMerge
		if i%3 == 1 {
			strategy = StrategySquash
		}
		res, err := f.repo.Merge(context.Background(), request(theirs, ours, shas[theirs], strategy, i+1))
		var ce *ConflictError
		switch {
		case err == nil:
			tree := f.treeOf(res.MergeSHA)
			if !clean || tree != gitTree {
				t.Errorf("%s: %s merged to tree %s; git merge-tree: %s (clean %v)", name, strategy, tree, gitTree, clean)
				logScenario(t, f, sc, shas[ours], shas[theirs])
				continue
			}
			f.checkParents(t, name, res, strategy, shas[ours], shas[theirs])
			bothClean++
			gitClean++
			if sc.changedOnBothSides() {
				lineMerges++
			}
		case errors.As(err, &ce):
			if clean {
				gitClean++
				t.Logf("%s: conflict where git merges cleanly: %v", name, ce)
			} else {
				conflictsBoth++
			}
		default:
			t.Fatalf("%s: Merge: %v", name, err)
		}
		if i%10 == 0 { // the PR onto the untouched base: a fast-forward
			base := fmt.Sprintf("s%d-base", i)
			res, err := f.repo.Merge(context.Background(), request(theirs, base, shas[theirs], StrategyFastForward, 100000+i))
			if err != nil || res.MergeSHA != shas[theirs] || f.rev(base) != shas[theirs] {
				t.Errorf("%s: fast-forward = %+v, %v; want %s on the branch", name, res, err, shas[theirs])
			}
			fastForwards++
		}
	}
	rate := 1.0
	if gitClean > 0 {
		rate = float64(bothClean) / float64(gitClean)
	}
	t.Logf("%d histories: git clean %d, Merge clean %d (%d of them merging lines of a file both sides changed), both conflict %d, fast-forwards %d",
		n, gitClean, bothClean, lineMerges, conflictsBoth, fastForwards)
	t.Log(fmt.Sprintf("agreement rate: %.2f%% (%d of the %d histories git merges cleanly)", 100*rate, bothClean, gitClean))
	if n >= 100 && rate < minAgreement {
		t.Errorf("agreement rate %.2f%% is below %.0f%%", 100*rate, 100*minAgreement)
	}
	if n >= 100 && (gitClean < n/3 || lineMerges < n/10) {
		t.Errorf("git merges %d of %d histories cleanly, %d with line merges; the generator no longer exercises them", gitClean, n, lineMerges)
	}
	f.fsck()
}

// buildScenarios writes every scenario's base, ours and theirs commits with
// one fast-import and returns the branches' shas.
func buildScenarios(f *fixture, scs []scenario) map[string]string {
	f.t.Helper()
	var specs []commitSpec
	for i, sc := range scs {
		base, ours, theirs := fmt.Sprintf("s%d-base", i), fmt.Sprintf("s%d-ours", i), fmt.Sprintf("s%d-theirs", i)
		specs = append(specs,
			commitSpec{ref: base, files: sc.base},
			commitSpec{ref: ours, parents: []string{base}, files: sc.ours},
			commitSpec{ref: theirs, parents: []string{base}, files: sc.theirs},
		)
	}
	return f.build(specs...)
}

// treeOf reads a commit's tree with go-git (no git process per case).
// mergeAgainstGit merges req with Merge and holds a clean merge to git's
// outcome for the same commits (gitTree, gitClean): git merges too, to the
// same tree, as git itself reads it. It reports whether Merge merged, or
// else its conflict's reason; any other error ends the test.
func (f *fixture) mergeAgainstGit(name string, req MergeRequest, gitTree string, gitClean bool) (merged bool, reason string) {
	f.t.Helper()
	res, err := f.repo.Merge(context.Background(), req)
	if err == nil {
		if tree := f.rev(res.MergeSHA + "^{tree}"); !gitClean || tree != gitTree {
			f.t.Errorf("%s: merged to %s; git %s (clean %v)", name, tree, gitTree, gitClean)
		}
		return true, ""
	}
	reason, isConflict := IsConflict(err)
	if !isConflict {
		f.t.Fatalf("%s: %v", name, err)
	}
	return false, reason
}

func (f *fixture) treeOf(sha string) string {
	f.t.Helper()
	c, err := f.repo.store.Commit(plumbing.NewHash(sha))
	if err != nil {
		f.t.Fatal(err)
	}
	return c.TreeHash.String()
}

// checkParents: a merge commit's parents are [target, PR head], a squash's
// the target alone.
func (f *fixture) checkParents(t *testing.T, name string, res Result, strategy, target, head string) {
	t.Helper()
	c, err := f.repo.store.Commit(plumbing.NewHash(res.MergeSHA))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{target, head}
	if strategy == StrategySquash {
		want = want[:1]
	}
	var got []string
	for _, p := range c.ParentHashes {
		got = append(got, p.String())
	}
	if strings.Join(got, " ") != strings.Join(want, " ") || res.BaseSHA != target {
		t.Errorf("%s: %s commit has parents %v (base %s), want %v", name, strategy, got, res.BaseSHA, want)
	}
}

func logScenario(t *testing.T, f *fixture, sc scenario, ours, theirs string) {
	t.Helper()
	out, _ := f.gitErr("", "", "merge-tree", "--write-tree", ours, theirs)
	t.Logf("git merge-tree says:\n%s", out)
	for _, side := range []struct {
		name  string
		files map[string]file
	}{{"base", sc.base}, {"ours", sc.ours}, {"theirs", sc.theirs}} {
		t.Logf("%s:", side.name)
		for p, fl := range side.files {
			t.Logf("  %s %s %q", fl.mode, p, fl.content)
		}
	}
}

// historyGen makes one random history: a base tree and two sides' changes.
// Contents are lines; a path's lines are tagged with the path and a
// number, so different files never look alike (git finds no renames), and
// new lines are always new — except in "repetitive" files, which mix in a
// few common lines ("}", blank, "end") where diffs may align differently.
type historyGen struct {
	rnd  *rand.Rand
	id   int
	next int // line counter
}

// historyPaths are the paths histories use: a few at the root, some nested.
var historyPaths = []string{"README", "main.go", "a/x.go", "a/y.go", "a/b/z.txt", "c/d/e/deep.txt", "c/w.txt", "lib/u.go"}

var commonLines = []string{"}\n", "\n", "end\n", "\treturn nil\n"}

func (g *historyGen) scenario() scenario {
	base := map[string]file{}
	for _, p := range historyPaths {
		if g.rnd.IntN(3) > 0 {
			base[p] = g.newFile(p)
		}
	}
	if len(base) == 0 {
		base["README"] = g.newFile("README")
	}
	ours, theirs := with(base, nil), with(base, nil)
	// A hot file both sides change: the line merge's case.
	var paths []string
	for _, p := range historyPaths {
		if _, ok := base[p]; ok {
			paths = append(paths, p)
		}
	}
	hot := paths[g.rnd.IntN(len(paths))]
	apart := g.rnd.IntN(4) > 0 // the sides edit different halves of files
	for half, side := range []map[string]file{ours, theirs} {
		if !apart {
			half = g.rnd.IntN(2)
		}
		for _, p := range paths {
			switch r := g.rnd.IntN(20); {
			case p == hot || r < 4:
				side[p] = g.editFile(p, side[p], half)
			case r == 6:
				delete(side, p)
			case r == 7:
				side[p] = toggleExec(side[p])
			}
		}
		if g.rnd.IntN(6) == 0 { // a new file where there is none
			if p := historyPaths[g.rnd.IntN(len(historyPaths))]; !has(side, p) {
				side[p] = g.newFile(p)
			}
		}
	}
	if fl, ok := ours[hot]; ok && g.rnd.IntN(8) == 0 {
		theirs[hot] = fl // the same change on both sides
	}
	return scenario{name: fmt.Sprintf("history %d", g.id), base: base, ours: ours, theirs: theirs}
}

func has(m map[string]file, p string) bool { _, ok := m[p]; return ok }

// changedOnBothSides reports whether some file's contents were changed
// differently by both sides: a merge of it has to merge lines.
func (sc scenario) changedOnBothSides() bool {
	for p, b := range sc.base {
		o, ok1 := sc.ours[p]
		t, ok2 := sc.theirs[p]
		if ok1 && ok2 && o.content != b.content && t.content != b.content && o.content != t.content {
			return true
		}
	}
	return false
}

// newFile makes a file: empty (1 in 10), of distinct lines, or repetitive
// (1 in 5); executable now and then; its last newline missing now and then.
func (g *historyGen) newFile(p string) file {
	var ls []string
	repetitive := g.rnd.IntN(5) == 0
	if g.rnd.IntN(10) > 0 {
		for range 1 + g.rnd.IntN(14) {
			ls = append(ls, g.line(p, repetitive))
		}
	}
	fl := reg(joinLines(ls, g.rnd.IntN(10) == 0))
	if g.rnd.IntN(8) == 0 {
		fl = exe(fl.content)
	}
	return fl
}

func (g *historyGen) line(p string, repetitive bool) string {
	if repetitive && g.rnd.IntN(3) == 0 {
		return commonLines[g.rnd.IntN(len(commonLines))]
	}
	g.next++
	return fmt.Sprintf("%s line %d.%d\n", p, g.id, g.next)
}

func joinLines(ls []string, dropLastNewline bool) string {
	s := strings.Join(ls, "")
	if dropLastNewline {
		s = strings.TrimSuffix(s, "\n")
	}
	return s
}

// editFile applies 1–2 line edits to a file: lines replaced, inserted or
// deleted; the last newline toggled; the whole file emptied or filled; the
// executable bit flipped. Edits fall into the given half of the file (0 or
// 1), so that the two sides' edits are apart, or close when both were given
// the same half. (Moved lines are TestMergeLinesMovedBlocks'.)
func (g *historyGen) editFile(p string, fl file, half int) file {
	ls := engine.SplitLines(fl.content)
	repetitive := false
	for _, l := range ls {
		for _, c := range commonLines {
			repetitive = repetitive || l == c
		}
	}
	missingNL := len(ls) > 0 && !strings.HasSuffix(ls[len(ls)-1], "\n")
	if missingNL {
		ls[len(ls)-1] += "\n"
	}
	pos := func() int {
		n := len(ls) + 1
		lo, hi := 0, n
		if n > 3 {
			if half == 0 {
				hi = n / 2
			} else {
				lo = n / 2
			}
		}
		return lo + g.rnd.IntN(hi-lo)
	}
	for range 1 + g.rnd.IntN(2) {
		at, k := pos(), 1+g.rnd.IntN(2)
		switch r := g.rnd.IntN(20); {
		case r < 6: // replace
			end := min(at+k, len(ls))
			var repl []string
			for range 1 + g.rnd.IntN(2) {
				repl = append(repl, g.line(p, repetitive))
			}
			ls = append(ls[:at], append(repl, ls[end:]...)...)
		case r < 11: // insert
			var ins []string
			for range k {
				ins = append(ins, g.line(p, repetitive))
			}
			ls = append(ls[:at], append(ins, ls[at:]...)...)
		case r < 17: // delete
			ls = append(ls[:at], ls[min(at+k, len(ls)):]...)
		case r == 17:
			missingNL = !missingNL
		case r == 18: // empty it, or fill an empty file
			if len(ls) > 0 {
				ls = nil
			} else {
				ls = []string{g.line(p, repetitive), g.line(p, repetitive)}
			}
		default:
			fl = toggleExec(fl)
		}
	}
	return file{fl.mode, joinLines(ls, missingNL)}
}

func toggleExec(fl file) file {
	switch fl.mode {
	case "100644":
		return exe(fl.content)
	case "100755":
		return reg(fl.content)
	}
	return fl
}
