package gitrepo

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/prsaga/prsaga/services/merger/gitrepo/engine"
)

// TestMergeCompatibilityCases holds each case of issue 13's list to git
// merge-tree: either the same clean tree, or both conflict, or a refusal
// whose reason names the case — never a different tree, never a clean
// merge where git conflicts. (TestMergeEdgeCases has more renames,
// directory renames, modes, symlinks, submodules and binary files.)
func TestMergeCompatibilityCases(t *testing.T) {
	var numbered, crlf string
	for i := range 20 {
		numbered += fmt.Sprintf("line %d\n", i)
		crlf += fmt.Sprintf("line %d\r\n", i)
	}
	edit := func(s string, i int, to string) string {
		ls := engine.SplitLines(s)
		ls[i] = to
		return strings.Join(ls, "")
	}
	// A file beyond the line merge's size limit (8 MiB), 200,000 lines.
	var big strings.Builder
	for i := range 200000 {
		fmt.Fprintf(&big, "a rather long line of a very large file, number %07d\n", i)
	}
	large := big.String()
	base := map[string]file{"p": reg(numbered), "keep": reg("keep\n")}
	const (
		clean    = "clean"    // both clean, same tree
		conflict = "conflict" // both conflict
		refused  = "refused"  // git clean; prsaga conflict naming the case
	)
	cases := []expected{
		{scenario{"rename on one side, edit on the other", base,
			with(base, map[string]file{"p": {}, "q": reg(numbered)}),
			with(base, map[string]file{"p": reg(edit(numbered, 3, "three\n"))})}, clean, ""},
		{scenario{"edit on one side, rename on the other", base,
			with(base, map[string]file{"p": reg(edit(numbered, 3, "three\n"))}),
			with(base, map[string]file{"p": {}, "q": reg(numbered)})}, clean, ""},
		{scenario{"rename into a new directory with a mode change, edit on the other", base,
			with(base, map[string]file{"p": {}, "n/m/q": exe(numbered)}),
			with(base, map[string]file{"p": reg(edit(numbered, 3, "three\n")), "t": reg("t\n")})}, clean, ""},
		{scenario{"rename into a directory the other side moved away, edit on the other", with(base, map[string]file{"d/x": reg("x\n" + numbered), "d/y": reg("y\n" + numbered)}),
			with(base, map[string]file{"p": {}, "d/q": reg(numbered), "d/x": reg("x\n" + numbered), "d/y": reg("y\n" + numbered)}),
			with(base, map[string]file{"p": reg(edit(numbered, 3, "three\n")), "e/x": reg("x\n" + numbered), "e/y": reg("y\n" + numbered)})}, conflict, ""},
		{scenario{"rename on one side, mode change on the other", base,
			with(base, map[string]file{"p": {}, "q": reg(numbered)}),
			with(base, map[string]file{"p": exe(numbered)})}, clean, ""},
		{scenario{"rename on one side, edit and new file at the new name on the other", base,
			with(base, map[string]file{"p": {}, "q": reg(numbered)}),
			with(base, map[string]file{"p": reg(edit(numbered, 3, "three\n")), "q": reg("other\n")})}, conflict, ""},
		{scenario{"one of two identical files renamed, edited on the other side", with(base, map[string]file{"p2": reg(numbered)}),
			with(base, map[string]file{"p": {}, "p2": reg(numbered), "q": reg(numbered)}),
			with(base, map[string]file{"p": reg(edit(numbered, 3, "three\n")), "p2": reg(numbered)})}, clean, ""},
		{scenario{"two identical files renamed, one edited on the other side", with(base, map[string]file{"p2": reg(numbered)}),
			with(base, map[string]file{"p": {}, "p2": {}, "q": reg(numbered), "q2": reg(numbered)}),
			with(base, map[string]file{"p": reg(edit(numbered, 3, "three\n")), "p2": reg(numbered)})}, refused, "may be renamed to q"},
		{scenario{"empty file renamed, filled on the other side", with(base, map[string]file{"e": reg("")}),
			with(base, map[string]file{"e": {}, "f": reg("")}),
			with(base, map[string]file{"e": reg("filled\n")})}, conflict, ""},
		{scenario{"rename with an edit on one side, edit on the other", base,
			with(base, map[string]file{"p": {}, "q": reg(edit(numbered, 19, "nineteen\n"))}),
			with(base, map[string]file{"p": reg(edit(numbered, 3, "three\n"))})}, clean, ""},
		{scenario{"the same rename on both sides", base,
			with(base, map[string]file{"p": {}, "q": reg(numbered)}),
			with(base, map[string]file{"p": {}, "q": reg(numbered), "t": reg("t\n")})}, refused, "renames are not merged"},
		{scenario{"rename on one side only", base,
			with(base, map[string]file{"p": {}, "q": reg(numbered)}),
			with(base, map[string]file{"t": reg("t\n")})}, clean, ""},
		{scenario{"directory renamed on one side, file in it edited on the other",
			with(base, map[string]file{"d/x": reg(numbered + "x\n")}),
			with(base, map[string]file{"e/x": reg(numbered + "x\n")}),
			with(base, map[string]file{"d/x": reg(edit(numbered, 3, "three\n") + "x\n")})}, clean, ""},
		{scenario{"mode changed on one side, content edited on the other", base,
			with(base, map[string]file{"p": exe(numbered)}),
			with(base, map[string]file{"p": reg(edit(numbered, 3, "three\n"))})}, clean, ""},
		{scenario{"symlink retargeted on both sides", with(base, map[string]file{"l": link("a")}),
			with(base, map[string]file{"l": link("b")}), with(base, map[string]file{"l": link("c")})}, conflict, ""},
		{scenario{"submodule bumped on one side, file edited on the other", with(base, map[string]file{"s": gitlink("1111111111111111111111111111111111111111")}),
			with(base, map[string]file{"s": gitlink("2222222222222222222222222222222222222222")}),
			with(base, map[string]file{"s": gitlink("1111111111111111111111111111111111111111"), "p": reg(edit(numbered, 3, "three\n"))})}, clean, ""},
		{scenario{"binary file changed on one side", with(base, map[string]file{"b": reg("\x00\x01\x02")}),
			with(base, map[string]file{"b": reg("\x00\x01\x03")}), with(base, map[string]file{"b": reg("\x00\x01\x02"), "t": reg("t\n")})}, clean, ""},
		{scenario{"CRLF file, edits apart", with(base, map[string]file{"c": reg(crlf)}),
			with(base, map[string]file{"c": reg(edit(crlf, 1, "one\r\n"))}),
			with(base, map[string]file{"c": reg(edit(crlf, 17, "seventeen\r\n"))})}, clean, ""},
		{scenario{"CRLF converted to LF on one side, edited on the other", with(base, map[string]file{"c": reg(crlf)}),
			with(base, map[string]file{"c": reg(numbered)}),
			with(base, map[string]file{"c": reg(edit(crlf, 17, "seventeen\r\n"))})}, conflict, ""},
		{scenario{"mixed line endings, edits apart", with(base, map[string]file{"c": reg(numbered[:40] + crlf[50:])}),
			with(base, map[string]file{"c": reg("first\r\n" + numbered[:40] + crlf[50:])}),
			with(base, map[string]file{"c": reg(numbered[:40] + crlf[50:] + "last\n")})}, clean, ""},
		{scenario{"final newline removed on one side, edit at the top on the other", base,
			with(base, map[string]file{"p": reg(strings.TrimSuffix(numbered, "\n"))}),
			with(base, map[string]file{"p": reg(edit(numbered, 0, "zero\n"))})}, clean, ""},
		{scenario{"final newline removed on one side, last line edited on the other", base,
			with(base, map[string]file{"p": reg(strings.TrimSuffix(numbered, "\n"))}),
			with(base, map[string]file{"p": reg(edit(numbered, 19, "nineteen\n"))})}, conflict, ""},
		{scenario{"no final newline, lines added at the end on one side", with(base, map[string]file{"n": reg("a\nb\nc")}),
			with(base, map[string]file{"n": reg("a\nb\nc\nd")}), with(base, map[string]file{"n": reg("a\nb\nc"), "t": reg("t\n")})}, clean, ""},
		{scenario{"no final newline, both sides edit apart", with(base, map[string]file{"p": reg(strings.TrimSuffix(numbered, "\n"))}),
			with(base, map[string]file{"p": reg(edit(strings.TrimSuffix(numbered, "\n"), 0, "zero\n"))}),
			with(base, map[string]file{"p": reg(edit(strings.TrimSuffix(numbered, "\n"), 19, "nineteen"))})}, clean, ""},
		{scenario{"empty file filled on both sides differently", with(base, map[string]file{"e": reg("")}),
			with(base, map[string]file{"e": reg("a\n")}), with(base, map[string]file{"e": reg("b\n")})}, conflict, ""},
		{scenario{"empty file filled on one side", with(base, map[string]file{"e": reg("")}),
			with(base, map[string]file{"e": reg("a\n")}), with(base, map[string]file{"e": reg(""), "t": reg("t\n")})}, clean, ""},
		{scenario{"file emptied on one side, edited on the other", base,
			with(base, map[string]file{"p": reg("")}), with(base, map[string]file{"p": reg(edit(numbered, 3, "three\n"))})}, conflict, ""},
		{scenario{"empty files added on both sides", base,
			with(base, map[string]file{"e": reg("")}), with(base, map[string]file{"e": reg(""), "t": reg("t\n")})}, clean, ""},
		{scenario{"very large file changed on one side", with(base, map[string]file{"big": reg(large)}),
			with(base, map[string]file{"big": reg("first\n" + large)}), with(base, map[string]file{"big": reg(large), "t": reg("t\n")})}, clean, ""},
		{scenario{"very large file changed apart on both sides", with(base, map[string]file{"big": reg(large)}),
			with(base, map[string]file{"big": reg("first\n" + large)}), with(base, map[string]file{"big": reg(large + "last\n")})}, refused, "too large"},
	}
	f := newFixture(t)
	checkExpected(t, f, cases)
	f.fsck()
}

// TestExactRenamesNeverWrong: random histories of renames (files, whole
// directories; half the file renames with a line added, inexact), edits,
// deletions and additions on both sides, merged by
// Merge and by git merge-tree: a clean merge is git's tree, never a clean
// merge where git conflicts.
func TestExactRenamesNeverWrong(t *testing.T) {
	const n = 300
	rnd := rand.New(rand.NewPCG(20251201, 99))
	dirs := []string{"", "d/", "e/", "f/", "d/g/"}
	names := []string{"a", "b", "c", "x"}
	f := newFixture(t)
	counter := 0
	content := func(tag string) file {
		counter++
		var b strings.Builder
		for i := range 8 {
			fmt.Fprintf(&b, "%s %d line %d\n", tag, counter, i)
		}
		return reg(b.String())
	}
	mutate := func(tr map[string]file, who string) map[string]file {
		tr = with(tr, nil)
		for range 1 + rnd.IntN(3) {
			var paths []string
			for p := range tr {
				paths = append(paths, p)
			}
			sort.Strings(paths)
			p := paths[rnd.IntN(len(paths))]
			switch rnd.IntN(6) {
			case 0, 1: // rename a file
				q := dirs[rnd.IntN(len(dirs))] + names[rnd.IntN(len(names))] + "2"
				if _, taken := tr[q]; !taken && !collides(tr, q) {
					tr[q] = tr[p]
					if rnd.IntN(2) == 0 { // an inexact rename: one line of eight changed
						tr[q] = reg(tr[p].content + who + " renamed it\n")
					}
					delete(tr, p)
				}
			case 2: // move a whole directory
				from, to := dirs[1+rnd.IntN(len(dirs)-1)], dirs[1+rnd.IntN(len(dirs)-1)]
				if from == to || strings.HasPrefix(to, from) || strings.HasPrefix(from, to) {
					continue
				}
				moved := with(tr, nil)
				ok := true
				for q, fl := range tr {
					if strings.HasPrefix(q, from) {
						delete(moved, q)
						nq := to + strings.TrimPrefix(q, from)
						if _, taken := moved[nq]; taken {
							ok = false
						}
						moved[nq] = fl
					}
				}
				if ok {
					tr = moved
				}
			case 3:
				tr[p] = content(who)
			case 4:
				if len(tr) > 1 {
					delete(tr, p)
				}
			default:
				q := dirs[rnd.IntN(len(dirs))] + names[rnd.IntN(len(names))]
				if _, taken := tr[q]; !taken && !collides(tr, q) {
					tr[q] = content(who)
				}
			}
		}
		return tr
	}
	var scs []scenario
	for i := range n {
		base := map[string]file{}
		for _, d := range dirs {
			for _, nm := range names[:1+rnd.IntN(len(names))] {
				if rnd.IntN(3) > 0 {
					base[d+nm] = content("base")
				}
			}
		}
		base["keep"] = reg("keep\n")
		scs = append(scs, scenario{name: fmt.Sprintf("renames %d", i), base: base, ours: mutate(base, "ours"), theirs: mutate(base, "theirs")})
	}
	c := runTally(t, f, scs, nil)
	same, refused, both := c.same, c.refused, c.both
	t.Logf("%d histories: %d as git, %d refused where git merges, %d conflicts for both", n, same, refused, both)
	if same < n/3 {
		t.Errorf("only %d of %d merged", same, n)
	}
}
