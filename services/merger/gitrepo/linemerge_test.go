package gitrepo

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/prsaga/prsaga/platform/gittest"
	"github.com/prsaga/prsaga/services/merger/gitrepo/engine"
)

// lines joins numbered lines "<prefix><n>\n" for each n.
func lines(prefix string, ns ...int) string {
	var b strings.Builder
	for _, n := range ns {
		fmt.Fprintf(&b, "%s%d\n", prefix, n)
	}
	return b.String()
}

// TestMergeLinesSemantics pins xdiff's rules on files whose lines all
// differ (so that every diff aligns them alike): what merges cleanly, to
// what, and what conflicts. Each case is also checked against `git
// merge-file`, which runs the same xdiff merge.
func TestMergeLinesSemantics(t *testing.T) {
	base := lines("l", 1, 2, 3, 4, 5, 6)
	for _, tc := range []struct {
		name, base, ours, theirs string
		want                     string // merged text; "" for a conflict
	}{
		{"disjoint edits one line apart", base, "L1\n" + lines("l", 2, 3, 4, 5, 6), lines("l", 1, 2) + "L3\n" + lines("l", 4, 5, 6),
			"L1\nl2\nL3\n" + lines("l", 4, 5, 6)},
		{"adjacent edits conflict", base, "L1\n" + lines("l", 2, 3, 4, 5, 6), lines("l", 1) + "L2\n" + lines("l", 3, 4, 5, 6), ""},
		{"overlapping edits conflict", base, lines("l", 1) + "X\n" + lines("l", 4, 5, 6), lines("l", 1, 2) + "Y\n" + lines("l", 4, 5, 6), ""},
		{"same edit on both sides", base, lines("l", 1) + "X\n" + lines("l", 3, 4, 5, 6), lines("l", 1) + "X\n" + lines("l", 3, 4, 5, 6),
			lines("l", 1) + "X\n" + lines("l", 3, 4, 5, 6)},
		{"same edit on both sides plus another", base, lines("l", 1) + "X\n" + lines("l", 3, 4, 5, 6), lines("l", 1) + "X\n" + lines("l", 3, 4, 5) + "Z\n",
			lines("l", 1) + "X\n" + lines("l", 3, 4, 5) + "Z\n"},
		{"insertions at the same place conflict", base, lines("l", 1, 2, 3) + "A\n" + lines("l", 4, 5, 6), lines("l", 1, 2, 3) + "B\n" + lines("l", 4, 5, 6), ""},
		{"insertion touching an edit conflicts", base, lines("l", 1, 2, 3) + "A\n" + lines("l", 4, 5, 6), lines("l", 1, 2, 3) + "L4\n" + lines("l", 5, 6), ""},
		{"insertion one line from an edit", base, lines("l", 1, 2, 3) + "A\n" + lines("l", 4, 5, 6), lines("l", 1, 2, 3, 4) + "L5\n" + lines("l", 6),
			lines("l", 1, 2, 3) + "A\n" + lines("l", 4) + "L5\n" + lines("l", 6)},
		{"deletions on both sides, apart", base, lines("l", 2, 3, 4, 5, 6), lines("l", 1, 2, 3, 4, 5), lines("l", 2, 3, 4, 5)},
		{"deletion next to an edit conflicts", base, lines("l", 1, 3, 4, 5, 6), lines("l", 1, 2) + "L3\n" + lines("l", 4, 5, 6), ""},
		{"trailing newline removed, other end edited", base, "L1\n" + lines("l", 2, 3, 4, 5, 6), strings.TrimSuffix(base, "\n"),
			"L1\n" + strings.TrimSuffix(lines("l", 2, 3, 4, 5, 6), "\n")},
		{"trailing newline removed and last line edited", base, lines("l", 1, 2, 3, 4, 5) + "L6\n", strings.TrimSuffix(base, "\n"), ""},
		{"trailing newline added on both sides", strings.TrimSuffix(base, "\n"), base, "L1\n" + lines("l", 2, 3, 4, 5, 6), "L1\n" + lines("l", 2, 3, 4, 5, 6)},
		{"empty base, different additions", "", "a\n", "b\n", ""},
		{"emptied on one side, edited on the other", base, "", lines("l", 1, 2) + "L3\n" + lines("l", 4, 5, 6), ""},
		{"emptied on both sides, one also adds", base, "", "new\n", ""},
		{"everything rewritten identically", base, "a\nb\n", "a\nb\n", "a\nb\n"},
	} {
		got, why := engine.MergeLines(tc.base, tc.ours, tc.theirs, engine.LineStyleText)
		if (why == "") != (tc.want != "") || got != tc.want {
			t.Errorf("%s: mergeLines = %q (%s), want %q", tc.name, got, why, tc.want)
		}
		gitMerged, gitClean := gitMergeFile(t, tc.base, tc.ours, tc.theirs)
		if gitClean != (tc.want != "") || gitClean && gitMerged != tc.want {
			t.Errorf("%s: git merge-file gives %q (clean %v); the case is wrong", tc.name, gitMerged, gitClean)
		}
	}
}

// gitMergeFile runs `git merge-file -p ours base theirs`: the merged text,
// and whether it is clean.
func gitMergeFile(t *testing.T, base, ours, theirs string) (string, bool) {
	t.Helper()
	dir := t.TempDir()
	var names []string
	for i, text := range []string{ours, base, theirs} {
		name := filepath.Join(dir, fmt.Sprint(i))
		if err := os.WriteFile(name, []byte(text), 0o666); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	cmd := exec.Command("git", append([]string{"merge-file", "-p"}, names...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME="+dir)
	out, err := cmd.Output()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out), true
	case errors.As(err, &exit) && exit.ExitCode() > 0 && exit.ExitCode() < 128:
		return string(out), false
	}
	t.Fatalf("git merge-file: %v", err)
	return "", false
}

// TestMergeLinesMatchesGitMergeFile: the merge rules are xdiff's. On
// random edits of files whose lines are all different and whose
// insertions are new lines, every diff aligns the files the same way, so
// mergeLines must agree with `git merge-file` (which runs the same merge
// over its own diff) on every case: clean or not, and the merged text.
func TestMergeLinesMatchesGitMergeFile(t *testing.T) {
	gittest.Need(t)
	n := 300
	if testing.Short() {
		n = 60
	}
	var clean, conflict int
	for i := range n {
		rnd := rand.New(rand.NewPCG(7, uint64(i)))
		g := &lineGen{rnd: rnd}
		base := g.fresh(rnd.IntN(12))
		ours, theirs := g.edit(base), g.edit(base)
		if rnd.IntN(5) == 0 {
			theirs = ours // the same edit on both sides
		}
		if rnd.IntN(4) == 0 { // and one more edit on one side
			theirs = g.edit(theirs)
		}
		bt, ot, tt := strings.Join(base, ""), strings.Join(ours, ""), strings.Join(theirs, "")
		got, why := engine.MergeLines(bt, ot, tt, engine.LineStyleText)
		want, gitOK := gitMergeFile(t, bt, ot, tt)
		if (why == "") != gitOK || gitOK && got != want {
			t.Errorf("case %d: mergeLines = %q (%s), git merge-file = %q (clean %v)\nbase %q\nours %q\ntheirs %q",
				i, got, why, want, gitOK, bt, ot, tt)
			continue
		}
		if gitOK {
			clean++
		} else {
			conflict++
		}
	}
	t.Logf("%d cases: %d clean, %d conflicts, all as git merge-file", n, clean, conflict)
}

// lineGen makes files of distinct lines and random edits of them.
type lineGen struct {
	rnd *rand.Rand
	n   int
}

// fresh returns k lines never made before.
func (g *lineGen) fresh(k int) []string {
	var out []string
	for range k {
		g.n++
		out = append(out, fmt.Sprintf("line %d\n", g.n))
	}
	return out
}

// edit applies up to three random changes (delete, insert, replace lines,
// drop or restore the last newline) to a copy of lines.
func (g *lineGen) edit(in []string) []string {
	out := append([]string(nil), in...)
	for range 1 + g.rnd.IntN(3) {
		at := g.rnd.IntN(len(out) + 1)
		n := g.rnd.IntN(3)
		switch g.rnd.IntN(4) {
		case 0: // delete
			out = append(out[:at], out[min(at+n, len(out)):]...)
		case 1: // insert
			out = append(out[:at], append(g.fresh(1+n), out[at:]...)...)
		case 2: // replace
			out = append(out[:at], append(g.fresh(1+g.rnd.IntN(2)), out[min(at+1+n, len(out)):]...)...)
		default: // toggle the newline at the end
			if len(out) > 0 {
				last := out[len(out)-1]
				if strings.HasSuffix(last, "\n") {
					out[len(out)-1] = strings.TrimSuffix(last, "\n")
				} else {
					out[len(out)-1] = last + "\n"
				}
			}
		}
	}
	// Only the last line may lack its newline.
	for i := 0; i < len(out)-1; i++ {
		if !strings.HasSuffix(out[i], "\n") {
			out[i] += "\n"
		}
	}
	return out
}

// TestMergeLinesMovedBlocks probes the alignment where diffs disagree
// most: blocks of lines moved within a file, repeated lines ("}", blank),
// and the other side editing near them. git (merge-ort's histogram diff) is
// the oracle: mergeLines must reach git's outcome on every case, and a
// clean merge must be git's to the byte. (With a Myers alignment instead
// of git's, this test finds merges git refuses and conflicts git merges.)
// -gitrepo.movecases=N runs more.
func TestMergeLinesMovedBlocks(t *testing.T) {
	n := *moveCases
	type trio struct{ base, ours, theirs string }
	var cases []trio
	var specs []commitSpec
	for i := range n {
		rnd := rand.New(rand.NewPCG(*diffSeed, uint64(i)))
		var base []string
		for k := range 4 + rnd.IntN(10) {
			if rnd.IntN(4) == 0 {
				base = append(base, []string{"}\n", "\n", "x\n"}[rnd.IntN(3)])
			} else {
				base = append(base, fmt.Sprintf("l%d\n", k))
			}
		}
		ours := moveBlock(rnd, base)
		if rnd.IntN(2) == 0 {
			ours = editLine(rnd, ours, "O\n")
		}
		theirs := editLine(rnd, base, "T\n")
		if rnd.IntN(3) == 0 {
			theirs = moveBlock(rnd, theirs)
		}
		c := trio{strings.Join(base, ""), strings.Join(ours, ""), strings.Join(theirs, "")}
		cases = append(cases, c)
		b, o, th := fmt.Sprintf("m%d-base", i), fmt.Sprintf("m%d-ours", i), fmt.Sprintf("m%d-theirs", i)
		specs = append(specs,
			commitSpec{ref: b, files: map[string]file{"f": reg(c.base)}},
			commitSpec{ref: o, parents: []string{b}, files: map[string]file{"f": reg(c.ours)}},
			commitSpec{ref: th, parents: []string{b}, files: map[string]file{"f": reg(c.theirs)}})
	}
	f := newFixture(t)
	shas := f.build(specs...)
	var gitClean, accepted int
	for i, c := range cases {
		tree, clean := f.mergeTree(shas[fmt.Sprintf("m%d-ours", i)], shas[fmt.Sprintf("m%d-theirs", i)])
		if clean {
			gitClean++
		}
		merged, why := engine.MergeLines(c.base, c.ours, c.theirs, engine.LineStyleText)
		if why != "" {
			if clean {
				t.Errorf("case %d: refused (%s), but git merges\nbase   %q\nours   %q\ntheirs %q", i, why, c.base, c.ours, c.theirs)
			}
			continue
		}
		accepted++
		if !clean {
			t.Errorf("case %d: merged, but git conflicts\nbase   %q\nours   %q\ntheirs %q", i, c.base, c.ours, c.theirs)
			continue
		}
		if got, want := plumbing.ComputeHash(plumbing.BlobObject, []byte(merged)).String(), f.rev(tree+":f"); got != want {
			t.Errorf("case %d: merged to %q, not git's\nbase   %q\nours   %q\ntheirs %q", i, merged, c.base, c.ours, c.theirs)
		}
	}
	t.Logf("%d moved-block cases: git clean %d, merged %d", n, gitClean, accepted)
}

var moveCases = flag.Int("gitrepo.movecases", envInt("GITREPO_MOVE_CASES", 300), "cases TestMergeLinesMovedBlocks runs")

// moveBlock moves 1–3 consecutive lines elsewhere in a copy of ls.
func moveBlock(rnd *rand.Rand, ls []string) []string {
	out := append([]string(nil), ls...)
	a := rnd.IntN(len(out))
	e := min(a+1+rnd.IntN(3), len(out))
	blk := append([]string(nil), out[a:e]...)
	out = append(out[:a], out[e:]...)
	to := rnd.IntN(len(out) + 1)
	return append(out[:to], append(blk, out[to:]...)...)
}

// editLine inserts, replaces or deletes one line of a copy of ls.
func editLine(rnd *rand.Rand, ls []string, line string) []string {
	out := append([]string(nil), ls...)
	a := rnd.IntN(len(out) + 1)
	switch {
	case rnd.IntN(3) == 0:
		return append(out[:a], append([]string{line}, out[a:]...)...)
	case a == len(out):
		return out
	case rnd.IntN(2) == 0:
		out[a] = line
		return out
	}
	return append(out[:a], out[a+1:]...)
}

// FuzzMergeLines: no input makes the line merge panic, and its answers
// keep the rules' symmetries: a side equal to the base gives the other
// side; the text merge of ours and theirs is that of theirs and ours; a
// union merge never conflicts on text git could merge.
func FuzzMergeLines(f *testing.F) {
	f.Add("a\nb\nc\n", "a\nB\nc\n", "a\nb\nC\n")
	f.Add("}\n\n}\n", "}\n\n}\n}\n", "\n}\n")
	f.Add("x\r\ny", "x\r\nz", "w\r\ny")
	f.Add("", "a\n", "b")
	f.Fuzz(func(t *testing.T, base, ours, theirs string) {
		m1, why1 := engine.MergeLines(base, ours, theirs, engine.LineStyleText)
		m2, why2 := engine.MergeLines(base, theirs, ours, engine.LineStyleText)
		if (why1 == "") != (why2 == "") || m1 != m2 {
			t.Errorf("not symmetric: %q (%s) and %q (%s)", m1, why1, m2, why2)
		}
		if got, why := engine.MergeLines(base, base, theirs, engine.LineStyleText); why != "" || got != theirs {
			t.Errorf("ours unchanged: %q (%s), want theirs", got, why)
		}
		u, whyU := engine.MergeLines(base, ours, theirs, engine.LineStyleUnion)
		if whyU == "" && why1 == "" && u != m1 {
			t.Errorf("union differs from a clean text merge: %q and %q", u, m1)
		}
	})
}
