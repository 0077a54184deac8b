package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// scenario is a three-way merge to check against git: base, ours (the
// target branch) and theirs (the PR), each a full snapshot.
type scenario struct {
	name               string
	base, ours, theirs map[string]file
}

// outcome of one scenario: ours (tree or conflict) next to git's.
type outcome struct {
	gitTree  string
	gitClean bool
	tree     string // empty on conflict
	conflict *ConflictError
}

// runScenarios builds every scenario's branches in one fast-import and
// merges each PR branch into its target with Merge and with git merge-tree.
func runScenarios(f *fixture, scs []scenario) []outcome {
	f.t.Helper()
	shas := buildScenarios(f, scs)
	out := make([]outcome, len(scs))
	for i, sc := range scs {
		ours, theirs := fmt.Sprintf("s%d-ours", i), fmt.Sprintf("s%d-theirs", i)
		o := &out[i]
		o.gitTree, o.gitClean = f.mergeTree(shas[ours], shas[theirs])
		res, err := f.repo.Merge(context.Background(), request(theirs, ours, shas[theirs], StrategyMerge, i+1))
		switch {
		case err == nil:
			o.tree = f.rev(res.MergeSHA + "^{tree}")
		case errors.As(err, &o.conflict):
		default:
			f.t.Fatalf("%s: Merge: %v", sc.name, err)
		}
	}
	return out
}

// checkNeverWrong is the property every merge must have: a clean result is
// git's clean result, to the tree id.
func checkNeverWrong(t *testing.T, name string, o outcome) bool {
	t.Helper()
	if o.tree != "" && (!o.gitClean || o.tree != o.gitTree) {
		t.Errorf("%s: merged to tree %s, but git merge-tree gives %s (clean: %v)", name, o.tree, o.gitTree, o.gitClean)
		return false
	}
	return true
}

// TestMergeEdgeCases pins down what the tree merge does where git's merge
// is subtle: renames, directory renames, modes, symlinks, submodules,
// file/directory changes. Each clean result is compared with git's.
func TestMergeEdgeCases(t *testing.T) {
	const (
		sub1 = "1111111111111111111111111111111111111111"
		sub2 = "2222222222222222222222222222222222222222"
		sub3 = "3333333333333333333333333333333333333333"
	)
	long := strings.Repeat("a line of text\n", 20)
	var numbered string // 20 different lines
	for i := range 20 {
		numbered += fmt.Sprintf("line %d\n", i)
	}
	base := map[string]file{"p": reg(long), "keep": reg("keep\n"), "d/x": reg("x\n" + long), "d/y": reg("y\n" + long)}
	cases := []struct {
		scenario
		want string // "clean" (and equal to git), "conflict", or "git-conflict" (git conflicts too)
	}{
		{scenario{"rename/delete", base, with(base, map[string]file{"p": {}, "q": reg(long)}), with(base, map[string]file{"p": {}})}, "git-conflict"},
		{scenario{"rename/rename 1to2", base, with(base, map[string]file{"p": {}, "q": reg(long)}), with(base, map[string]file{"p": {}, "r": reg(long)})}, "git-conflict"},
		{scenario{"inexact rename/delete", base, with(base, map[string]file{"p": {}, "q": reg(long + "more\n")}), with(base, map[string]file{"p": {}})}, "git-conflict"},
		{scenario{"directory renamed, PR adds to it", base,
			with(base, map[string]file{"d/x": {}, "d/y": {}, "e/x": reg("x\n" + long), "e/y": reg("y\n" + long)}),
			with(base, map[string]file{"d/z": reg("z\n")})}, "git-conflict"},
		{scenario{"directory removed, PR adds to it", base, with(base, map[string]file{"d/x": {}, "d/y": {}}),
			with(base, map[string]file{"d/z": reg("z\n")})}, "conflict"},
		{scenario{"directory removed by the PR, target adds to it", base, with(base, map[string]file{"d/sub/z": reg("z\n")}),
			with(base, map[string]file{"d/x": {}, "d/y": {}})}, "conflict"},
		{scenario{"directory partly moved, PR adds to it", base,
			with(base, map[string]file{"d/x": {}, "e/x": reg("x\n" + long)}),
			with(base, map[string]file{"d/z": reg("z\n")})}, "clean"},
		{scenario{"renamed on one side, copied on the other", base, with(base, map[string]file{"p": {}, "q": reg(long)}),
			with(base, map[string]file{"q": reg(long)})}, "clean"},
		{scenario{"both delete, both add unrelated small files", base, with(base, map[string]file{"p": {}, "n1": reg("1\n")}),
			with(base, map[string]file{"p": {}, "n2": reg("2\n")})}, "clean"},
		{scenario{"mode on one side, content on the other", base, with(base, map[string]file{"keep": exe("keep\n")}),
			with(base, map[string]file{"keep": reg("changed\n")})}, "clean"},
		{scenario{"mode on one side, lines merged", with(base, map[string]file{"n": reg(numbered)}),
			with(base, map[string]file{"n": exe("first\n" + numbered)}), with(base, map[string]file{"n": reg(numbered + "last\n")})}, "clean"},
		{scenario{"mode changed on both sides alike, lines merged", with(base, map[string]file{"n": reg(numbered)}),
			with(base, map[string]file{"n": exe("first\n" + numbered)}), with(base, map[string]file{"n": exe(numbered + "last\n")})}, "clean"},
		{scenario{"changes separated only by repeated lines", base, with(base, map[string]file{"p": reg("first\n" + long)}),
			with(base, map[string]file{"p": reg(long + "last\n")})}, "clean"},
		{scenario{"executable added on both sides with different contents", base, with(base, map[string]file{"n": exe("a\n")}),
			with(base, map[string]file{"n": exe("b\n")})}, "git-conflict"},
		{scenario{"symlink and file changed on both sides", with(base, map[string]file{"l": reg("x\n")}),
			with(base, map[string]file{"l": link("x")}), with(base, map[string]file{"l": reg("y\n")})}, "git-conflict"},
		{scenario{"binary file changed on both sides", with(base, map[string]file{"b": reg("a\x00\n1\n2\n3\n")}),
			with(base, map[string]file{"b": reg("A\x00\n1\n2\n3\n")}), with(base, map[string]file{"b": reg("a\x00\n1\n2\n3!\n")})}, "git-conflict"},
		{scenario{"NUL past the first 8000 bytes: text", with(base, map[string]file{"b": reg("a\n" + strings.Repeat("-", 8100) + "\x00\nz\n")}),
			with(base, map[string]file{"b": reg("A\n" + strings.Repeat("-", 8100) + "\x00\nz\n")}),
			with(base, map[string]file{"b": reg("a\n" + strings.Repeat("-", 8100) + "\x00\nZ\n")})}, "clean"},
		{scenario{"mode on one side only", base, with(base, map[string]file{"keep": exe("keep\n")}), base}, "clean"},
		{scenario{"same mode change on both sides", base, with(base, map[string]file{"keep": exe("keep\n")}),
			with(base, map[string]file{"keep": exe("keep\n"), "t": reg("t\n")})}, "clean"},
		{scenario{"symlinks added on both sides", base, with(base, map[string]file{"l": link("keep")}),
			with(base, map[string]file{"l": link("p")})}, "git-conflict"},
		{scenario{"symlink retargeted on one side", with(base, map[string]file{"l": link("keep")}),
			with(base, map[string]file{"l": link("p")}), with(base, map[string]file{"l": link("keep"), "t": reg("t\n")})}, "clean"},
		{scenario{"submodule bumped on one side", with(base, map[string]file{"s": gitlink(sub1)}),
			with(base, map[string]file{"s": gitlink(sub2)}), with(base, map[string]file{"s": gitlink(sub1), "t": reg("t\n")})}, "clean"},
		{scenario{"submodule bumped on both sides", with(base, map[string]file{"s": gitlink(sub1)}),
			with(base, map[string]file{"s": gitlink(sub2)}), with(base, map[string]file{"s": gitlink(sub3)})}, "git-conflict"},
		{scenario{"submodule replaced by a symlink, and bumped", with(base, map[string]file{"s": gitlink(sub1)}),
			with(base, map[string]file{"s": gitlink(sub2)}), with(base, map[string]file{"s": link("elsewhere")})}, "git-conflict"},
		{scenario{"file becomes a directory on one side", base, with(base, map[string]file{"keep": {}, "keep/inside": reg("i\n")}),
			with(base, map[string]file{"t": reg("t\n")})}, "clean"},
		{scenario{"file becomes a directory, other side edits it", base, with(base, map[string]file{"keep": {}, "keep/inside": reg("i\n")}),
			with(base, map[string]file{"keep": reg("edited\n")})}, "git-conflict"},
		{scenario{"file added on one side, directory on the other", base, with(base, map[string]file{"n": reg("n\n")}),
			with(base, map[string]file{"n/x": reg("x\n")})}, "git-conflict"},
		{scenario{"everything deleted on one side", base, map[string]file{}, base}, "clean"},
		{scenario{"identical additions", base, with(base, map[string]file{"n/m/o": reg("o\n")}),
			with(base, map[string]file{"n/m/o": reg("o\n"), "d/x": reg("changed\n")})}, "clean"},
		{scenario{"two files renamed onto one name, same content", with(base, map[string]file{"q": reg(long)}),
			with(base, map[string]file{"p": {}, "r": reg(long), "q": reg(long)}), with(base, map[string]file{"q": {}, "r": reg(long)})}, "clean"},
	}
	f := newFixture(t)
	scs := make([]scenario, len(cases))
	for i, c := range cases {
		scs[i] = c.scenario
	}
	for i, o := range runScenarios(f, scs) {
		c := cases[i]
		checkNeverWrong(t, c.name, o)
		switch {
		case c.want == "clean" && o.tree == "":
			t.Errorf("%s: conflict %v, want a clean merge (git: clean %v)", c.name, o.conflict, o.gitClean)
		case c.want != "clean" && o.conflict == nil:
			t.Errorf("%s: merged to %s, want a conflict", c.name, o.tree)
		case c.want == "git-conflict" && o.gitClean:
			t.Errorf("%s: git merges it cleanly; the case is mislabelled", c.name)
		case c.want == "conflict" && !o.gitClean:
			t.Errorf("%s: git conflicts too; label it git-conflict", c.name)
		}
	}
	f.fsck()
}

// TestLineMergeRespectsAttributes: attributes other than merge change
// nothing (a .gitattributes on the way, in ours or added by the PR, used
// to turn line merges off); info/attributes' merge=binary does, in git as
// here. (TestMergeHonoursMergeAttribute has the variants.)
func TestLineMergeRespectsAttributes(t *testing.T) {
	var text string
	for i := range 10 {
		text += fmt.Sprintf("line %d\n", i)
	}
	ours := "first\n" + text
	theirs := text + "last\n"
	f := newFixture(t)
	base := map[string]file{"d/n.txt": reg(text), "keep": reg("keep\n")}
	outs := runScenarios(f, []scenario{
		{"plain", base, with(base, map[string]file{"d/n.txt": reg(ours)}), with(base, map[string]file{"d/n.txt": reg(theirs)})},
		{"gitattributes above it", with(base, map[string]file{".gitattributes": reg("*.txt text\n")}),
			with(base, map[string]file{".gitattributes": reg("*.txt text\n"), "d/n.txt": reg(ours)}),
			with(base, map[string]file{".gitattributes": reg("*.txt text\n"), "d/n.txt": reg(theirs)})},
		{"gitattributes added beside it", base, with(base, map[string]file{"d/n.txt": reg(ours)}),
			with(base, map[string]file{"d/.gitattributes": reg("*.txt text\n"), "d/n.txt": reg(theirs)})},
	})
	for i, want := range []bool{true, true, true} {
		checkNeverWrong(t, fmt.Sprint(i), outs[i])
		if clean := outs[i].tree != ""; clean != want || !outs[i].gitClean {
			t.Errorf("case %d: clean %v (%v), want %v; git clean %v", i, clean, outs[i].conflict, want, outs[i].gitClean)
		}
	}

	g := newFixture(t)
	if err := os.MkdirAll(filepath.Join(g.bare, "info"), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(g.bare, "info", "attributes"), []byte("* merge=binary\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	o := runScenarios(g, []scenario{{"info/attributes", base, with(base, map[string]file{"d/n.txt": reg(ours)}),
		with(base, map[string]file{"d/n.txt": reg(theirs)})}})[0]
	if o.conflict == nil || o.gitClean {
		t.Errorf("with info/attributes: conflict %v, git clean %v; want both to conflict", o.conflict, o.gitClean)
	}
}

// expected is a scenario with the outcome it must have: want is "clean"
// (both clean, same tree), "conflict" (both conflict) or "refused" (git
// clean; a conflict here whose reason names inReason).
type expected struct {
	scenario
	want, inReason string
}

// checkExpected runs the cases and holds each to its expected outcome, and
// every clean one to git's tree.
func checkExpected(t *testing.T, f *fixture, cases []expected) {
	t.Helper()
	scs := make([]scenario, len(cases))
	for i, c := range cases {
		scs[i] = c.scenario
	}
	for i, o := range runScenarios(f, scs) {
		c := cases[i]
		if !checkNeverWrong(t, c.name, o) {
			continue
		}
		var reason string
		if o.conflict != nil {
			reason = o.conflict.Reason
		}
		switch c.want {
		case "clean":
			if o.tree == "" || !o.gitClean {
				t.Errorf("%s: conflict %q, git clean %v; want both clean", c.name, reason, o.gitClean)
			}
		case "conflict":
			if o.conflict == nil || o.gitClean {
				t.Errorf("%s: conflict %q, git clean %v; want both to conflict", c.name, reason, o.gitClean)
			}
		case "refused":
			if o.conflict == nil || !o.gitClean || !strings.Contains(reason, c.inReason) {
				t.Errorf("%s: conflict %q, git clean %v; want git clean and a refusal naming %q", c.name, reason, o.gitClean, c.inReason)
			}
		default:
			t.Fatalf("%s: unknown expectation %q", c.name, c.want)
		}
		t.Logf("%-75s %s (git clean %v) %s", c.name, map[bool]string{true: "merged", false: "conflict"}[o.tree != ""], o.gitClean, reason)
	}
}

// tally counts scenarios' outcomes.
type tally struct {
	same    int // merged as git merges
	refused int // a conflict here, clean for git
	both    int // a conflict for both
}

// runTally runs the scenarios, holds every clean result to git's tree
// (logging the snapshots of one that is not) and counts the others'
// outcomes; each, if not nil, is shown every one of them.
func runTally(t *testing.T, f *fixture, scs []scenario, each func(i int, o outcome)) tally {
	t.Helper()
	var c tally
	for i, o := range runScenarios(f, scs) {
		if !checkNeverWrong(t, scs[i].name, o) {
			t.Logf("%s:\n base   %q\n ours   %q\n theirs %q", scs[i].name, scs[i].base, scs[i].ours, scs[i].theirs)
			continue
		}
		switch {
		case o.tree != "":
			c.same++
		case o.gitClean:
			c.refused++
		default:
			c.both++
		}
		if each != nil {
			each(i, o)
		}
	}
	return c
}
