package gitrepo

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestInexactRenamesNeverWrong: random histories where one side renames a
// file and edits it (from a line to most of the file, so that the
// similarity sweeps across git's 50% threshold and our margins), the other
// side edits it in place — apart or at the same lines — with rivals:
// similar files added or deleted on the renaming side, renames into new
// directories, mode changes, long lines, CRLF. Merged by Merge and by git
// merge-tree: a clean merge is git's tree, never a clean merge where git
// conflicts; and the clear cases are merged.
func TestInexactRenamesNeverWrong(t *testing.T) {
	const n = 400
	rnd := rand.New(rand.NewPCG(20251201, 13))
	f := newFixture(t)
	text := func(tag string, lines int, long bool) []string {
		var ls []string
		for i := range lines {
			l := fmt.Sprintf("%s line %d of %d, %x", tag, i, lines, rnd.Uint32())
			if long && i%3 == 0 {
				l += strings.Repeat(" padding", 10+rnd.IntN(10))
			}
			ls = append(ls, l+"\n")
		}
		return ls
	}
	// editLines replaces k of the lines (from a random place, spread).
	editLines := func(ls []string, k int, who string, from int) []string {
		out := append([]string(nil), ls...)
		for i := range k {
			j := (from + i*(1+rnd.IntN(2))) % len(out)
			out[j] = fmt.Sprintf("%s changed line %d %x\n", who, j, rnd.Uint32())
		}
		return out
	}
	join := func(ls []string) string { return strings.Join(ls, "") }
	newDirs := []string{"", "moved/", "n/m/", "d/"}
	var scs []scenario
	var clear []bool // a case where our margins must merge if git does
	for i := range n {
		lines := 6 + rnd.IntN(40)
		long := rnd.IntN(4) == 0
		old := text(fmt.Sprintf("case %d", i), lines, long)
		if rnd.IntN(10) == 0 {
			for j := range old {
				old[j] = strings.TrimSuffix(old[j], "\n") + "\r\n"
			}
		}
		base := map[string]file{"d/p.go": reg(join(old)), "keep": reg("keep\n"), "d/other": reg(join(text("other", 10, false)))}
		// The renaming side edits k lines: from none to most.
		k := rnd.IntN(lines*7/10 + 1)
		renamed := editLines(old, k, "ours", rnd.IntN(lines))
		if rnd.IntN(5) == 0 { // grow or shrink the file too
			if rnd.IntN(2) == 0 {
				renamed = append(renamed, text("added", 1+rnd.IntN(lines/2+1), false)...)
			} else {
				renamed = renamed[:len(renamed)-rnd.IntN(len(renamed)/2+1)]
			}
		}
		newName := newDirs[rnd.IntN(len(newDirs))] + []string{"q.go", "p2.go", "p.go"}[rnd.IntN(3)]
		if newName == "d/p.go" {
			newName = "d/r.go"
		}
		ours := with(base, map[string]file{"d/p.go": {}})
		nf := reg(join(renamed))
		if rnd.IntN(8) == 0 {
			nf = exe(nf.content)
		}
		ours[newName] = nf
		// The other side edits in place: apart, or near, the renaming
		// side's edits.
		theirsEdit := editLines(old, 1+rnd.IntN(3), "theirs", rnd.IntN(lines))
		theirs := with(base, map[string]file{"d/p.go": reg(join(theirsEdit))})
		rivals := false
		switch rnd.IntN(6) {
		case 0: // a similar file added on the renaming side too
			ours["extra/copy.go"] = reg(join(editLines(old, rnd.IntN(lines), "copy", rnd.IntN(lines))))
			rivals = true
		case 1: // a similar file deleted on the renaming side
			base["d/twin.go"] = reg(join(editLines(old, rnd.IntN(lines), "twin", rnd.IntN(lines))))
			theirs["d/twin.go"] = base["d/twin.go"]
			rivals = true
		case 2: // an unrelated file added on the renaming side
			ours["extra/new.go"] = reg(join(text("unrelated", lines, false)))
		case 3: // the other side also adds a file
			theirs["t/new.go"] = reg(join(text("theirs new", 5, false)))
		}
		sc := scenario{name: fmt.Sprintf("inexact %d (k=%d of %d, to %s)", i, k, lines, newName), base: base, ours: ours, theirs: theirs}
		if rnd.IntN(2) == 0 { // mirror: the PR renames
			sc.ours, sc.theirs = sc.theirs, sc.ours
		}
		scs = append(scs, sc)
		clear = append(clear, !rivals && len(renamed) == lines && k*10 <= lines*2 && !long)
	}
	var clearRefused int
	c := runTally(t, f, scs, func(i int, o outcome) {
		if o.tree == "" && o.gitClean && clear[i] { // refused where git merges
			clearRefused++
			t.Logf("%s: refused where clear: %s", scs[i].name, o.conflict.Reason)
		}
	})
	same, refused, both := c.same, c.refused, c.both
	t.Logf("%d histories: %d as git, %d refused where git merges (%d of them clear cases), %d conflicts for both", n, same, refused, clearRefused, both)
	if clearRefused > 0 {
		t.Errorf("%d clear inexact renames refused", clearRefused)
	}
	if same < 2*refused { // two thirds of git's clean merges; the rest are in the grey zone
		t.Errorf("only %d of %d git-clean merges merged", same, same+refused)
	}
}

// TestInexactRenameCases pins the inexact rename cases down against git:
// merged where the pairing is clear, a conflict where git conflicts, and a
// refusal naming the rename in the grey zone or with rivals. The merge
// attribute is checked with git reading the target's .gitattributes (git
// merge-tree in a work tree): git merges by the new name's attribute,
// whichever side renamed.
func TestInexactRenameCases(t *testing.T) {
	var numbered []string
	for i := range 30 {
		numbered = append(numbered, fmt.Sprintf("line %d of the file\n", i))
	}
	edit := func(at []int, to string) string {
		ls := append([]string(nil), numbered...)
		for _, i := range at {
			ls[i] = fmt.Sprintf("%s %d\n", to, i)
		}
		return strings.Join(ls, "")
	}
	orig := strings.Join(numbered, "")
	base := map[string]file{"p": reg(orig), "keep": reg("keep\n")}
	const (
		clean    = "clean"
		conflict = "conflict"
		refused  = "refused"
	)
	cases := []expected{
		{scenario{"renamed with an edit, edited apart on the other side", base,
			with(base, map[string]file{"p": {}, "q": reg(edit([]int{28}, "ours"))}),
			with(base, map[string]file{"p": reg(edit([]int{2}, "theirs"))})}, clean, ""},
		{scenario{"edited in place, renamed with an edit by the PR", base,
			with(base, map[string]file{"p": reg(edit([]int{2}, "ours"))}),
			with(base, map[string]file{"p": {}, "q": reg(edit([]int{28}, "theirs"))})}, clean, ""},
		{scenario{"renamed into a new directory with an edit and a mode change", base,
			with(base, map[string]file{"p": {}, "n/m/q": exe(edit([]int{20, 25}, "ours"))}),
			with(base, map[string]file{"p": reg(edit([]int{2}, "theirs"))})}, clean, ""},
		{scenario{"renamed with an edit, mode changed on the other side", base,
			with(base, map[string]file{"p": {}, "q": reg(edit([]int{28}, "ours"))}),
			with(base, map[string]file{"p": exe(orig)})}, clean, ""},
		{scenario{"renamed with an edit, the same line edited on the other side", base,
			with(base, map[string]file{"p": {}, "q": reg(edit([]int{5}, "ours"))}),
			with(base, map[string]file{"p": reg(edit([]int{5}, "theirs"))})}, conflict, ""},
		{scenario{"renamed with an edit on both sides", base,
			with(base, map[string]file{"p": {}, "q": reg(edit([]int{5}, "ours"))}),
			with(base, map[string]file{"p": {}, "r": reg(edit([]int{9}, "theirs"))})}, conflict, ""},
		{scenario{"renamed with an edit, deleted on the other side", base,
			with(base, map[string]file{"p": {}, "q": reg(edit([]int{5}, "ours"))}),
			with(base, map[string]file{"p": {}})}, conflict, ""},
		{scenario{"renamed with many edits (grey zone), edited on the other side", base,
			with(base, map[string]file{"p": {}, "q": reg(edit([]int{0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24}, "ours"))}),
			with(base, map[string]file{"p": reg(edit([]int{28}, "theirs"))})}, refused, "may be renamed to q"},
		{scenario{"renamed with an edit next to a similar new file, edited on the other side", base,
			with(base, map[string]file{"p": {}, "q": reg(edit([]int{28}, "ours")), "r": reg(edit([]int{1, 2, 3, 4, 5, 6, 7, 8}, "copy"))}),
			with(base, map[string]file{"p": reg(edit([]int{2}, "theirs"))})}, refused, "may be renamed to"},
		{scenario{"renamed with an edit, other side adds a file at the new name", base,
			with(base, map[string]file{"p": {}, "q": reg(edit([]int{28}, "ours"))}),
			with(base, map[string]file{"p": reg(edit([]int{2}, "theirs")), "q": reg("other\n")})}, conflict, ""},
	}
	f := newFixture(t)
	checkExpected(t, f, cases)

	// Merge attributes: the same edit place on both sides conflicts, unless
	// the file merges with union.
	for _, ac := range []struct {
		name, attrs, from, to string
		prRenames             bool
		want                  string
	}{
		{"union on both names", "*.txt merge=union\n", "p.txt", "q.txt", false, clean},
		{"union on the old name only", "p.txt merge=union\n", "p.txt", "q.txt", false, conflict},
		{"union on the new name only", "q.txt merge=union\n", "p.txt", "q.txt", false, clean},
		{"union on the old name only, the PR renames", "p.txt merge=union\n", "p.txt", "q.txt", true, conflict},
		{"union on the new name only, the PR renames", "q.txt merge=union\n", "p.txt", "q.txt", true, clean},
		{"-merge on the new name only", "*.txt merge=union\nq.txt -merge\n", "p.txt", "q.txt", false, conflict},
	} {
		b := map[string]file{".gitattributes": reg(ac.attrs), ac.from: reg(orig)}
		ours := with(b, map[string]file{ac.from: {}, ac.to: reg(edit([]int{5}, "ours"))})
		theirs := with(b, map[string]file{ac.from: reg(edit([]int{5}, "theirs"))})
		if ac.prRenames {
			ours, theirs = theirs, ours
		}
		pre := "attr-" + strings.ReplaceAll(ac.name, " ", "-") + "-"
		shas := f.build(
			commitSpec{ref: pre + "base", files: b},
			commitSpec{ref: pre + "ours", parents: []string{pre + "base"}, files: ours},
			commitSpec{ref: pre + "theirs", parents: []string{pre + "base"}, files: theirs},
		)
		gitTree, gitClean := f.mergeTreeWithAttributes(shas[pre+"ours"], shas[pre+"theirs"])
		merged, ce := f.mergeAgainstGit(ac.name, request(pre+"theirs", pre+"ours", shas[pre+"theirs"], StrategyMerge, 1000), gitTree, gitClean)
		switch {
		case merged:
			if ac.want != clean {
				t.Errorf("%s: merged; want %s", ac.name, ac.want)
			}
		default:
			if ac.want == clean {
				t.Errorf("%s: conflict %q; want clean", ac.name, ce)
			}
			if gitClean {
				t.Errorf("%s: conflict %q; git merges", ac.name, ce)
			}
			t.Logf("%s: conflict %q (git clean %v)", ac.name, ce, gitClean)
		}
	}
}
