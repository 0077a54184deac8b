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
	var same, refused, both, clearRefused int
	for i, o := range runScenarios(f, scs) {
		if !checkNeverWrong(t, scs[i].name, o) {
			t.Logf("%s:\n base   %q\n ours   %q\n theirs %q", scs[i].name, scs[i].base, scs[i].ours, scs[i].theirs)
			continue
		}
		switch {
		case o.tree != "":
			same++
		case o.gitClean:
			refused++
			if clear[i] {
				clearRefused++
				t.Logf("%s: refused where clear: %s", scs[i].name, o.conflict.Reason)
			}
		default:
			both++
		}
	}
	t.Logf("%d histories: %d as git, %d refused where git merges (%d of them clear cases), %d conflicts for both", n, same, refused, clearRefused, both)
	if clearRefused > 0 {
		t.Errorf("%d clear inexact renames refused", clearRefused)
	}
	if same < 2*refused { // two thirds of git's clean merges; the rest are in the grey zone
		t.Errorf("only %d of %d git-clean merges merged", same, same+refused)
	}
}
