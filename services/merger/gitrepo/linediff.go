package gitrepo

import (
	"unicode/utf8"

	"github.com/sergi/go-diff/diffmatchpatch"
)

// Line diffs for the content merge. Lines are git's records: each line with
// its terminating "\n", and a last line without one is a record of its own
// ("x" and "x\n" differ), exactly as xdiff splits a file.
//
// The diff itself is sergi/go-diff's Myers implementation (the library
// go-git wraps in utils/diff), run without a deadline: with a deadline it
// would switch to its non-minimal "half match" speed-up and give up part way
// depending on the machine's load, so a merge could come out differently on
// a retry. Without one it is exact and deterministic; its worst case,
// O((n+m)·d), is bounded by the size limits of filemerge.go.

// hunk is one change of a side against the base, as xdiff's xdchange_t:
// base lines [i1, i1+chg1) become side lines [i2, i2+chg2). Hunks are
// sorted and separated by at least one unchanged line.
type hunk struct {
	i1, chg1 int // base
	i2, chg2 int // side
}

// sideDiff is the line diff of the base against one side.
type sideDiff struct {
	hunks []hunk
	// baseMatch[i] is the side line that base line i is kept as, or -1 if
	// the side deleted it; sideMatch[j] is the base line side line j is,
	// or -1 if the side inserted it.
	baseMatch, sideMatch []int
}

// splitLines splits a blob into git's line records. The lines share the
// blob's memory.
func splitLines(s string) []string {
	var lines []string
	for len(s) > 0 {
		i := indexNL(s)
		if i < 0 {
			lines = append(lines, s)
			break
		}
		lines = append(lines, s[:i+1])
		s = s[i+1:]
	}
	return lines
}

func indexNL(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			return i
		}
	}
	return -1
}

// diffLines diffs base against side (the texts and their splitLines). ok is
// false if the library split the texts differently from git's records,
// which would make every index below meaningless.
func diffLines(baseText, sideText string, base, side []string) (d sideDiff, ok bool) {
	dmp := diffmatchpatch.New()
	dmp.DiffTimeout = 0 // exact and deterministic; see the package comment above
	r1, r2, _ := dmp.DiffLinesToRunes(baseText, sideText)
	if len(r1) != len(base) || len(r2) != len(side) {
		return sideDiff{}, false
	}
	d.baseMatch = make([]int, len(base))
	d.sideMatch = make([]int, len(side))
	i, j := 0, 0 // next base and side line
	var cur *hunk
	for _, df := range dmp.DiffMainRunes(r1, r2, false) {
		n := utf8.RuneCountInString(df.Text) // one rune per line
		switch df.Type {
		case diffmatchpatch.DiffEqual:
			for k := 0; k < n; k++ {
				d.baseMatch[i+k], d.sideMatch[j+k] = j+k, i+k
			}
			i, j, cur = i+n, j+n, nil
			continue
		case diffmatchpatch.DiffDelete:
			for k := 0; k < n; k++ {
				d.baseMatch[i+k] = -1
			}
		case diffmatchpatch.DiffInsert:
			for k := 0; k < n; k++ {
				d.sideMatch[j+k] = -1
			}
		}
		if cur == nil {
			d.hunks = append(d.hunks, hunk{i1: i, i2: j})
			cur = &d.hunks[len(d.hunks)-1]
		}
		if df.Type == diffmatchpatch.DiffDelete {
			cur.chg1 += n
			i += n
		} else {
			cur.chg2 += n
			j += n
		}
	}
	if i != len(base) || j != len(side) {
		return sideDiff{}, false
	}
	return d, true
}
