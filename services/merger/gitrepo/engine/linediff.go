package engine

import "context"

// Line diffs for the content merge, aligned as git's merge aligns them.
//
// Lines are git's records: each line with its terminating "\n", and a last
// line without one is a record of its own ("x" and "x\n" differ). A merge
// interns the lines of its three files into small integers once, so that
// the diffs compare integers.
//
// git's merge (merge-ort) diffs each side against the base with the
// histogram algorithm, then slides every change group to a canonical place
// (git's "compaction"), and merges the resulting hunks. Both steps are
// written here from their published descriptions and held to
// `git diff --histogram --no-indent-heuristic` and `git merge-tree` by the
// tests (histogram_test.go, gitrepo/corpus_test.go): two different alignments of
// the same pair of files can merge differently, so the alignment has to
// be git's, not just a minimal one.
//
// The histogram diff (as JGit documents it) works on a region of each
// file: it counts how often each line of the base region occurs, scans the
// side region for a line it shares with the base whose count is lowest,
// grows the match around it while the lines agree, keeps it, and does the
// same left and right of it. The details that decide the alignment, found
// by differential testing:
//   - a line occurring more than 64 times in the base region is not used to
//     start a match; if the two regions share only such lines, git falls
//     back to its classic O(ND) diff there. We do not imitate that diff:
//     such a merge is refused (errAlignment).
//   - the side is scanned from its start; at each side line every
//     occurrence of that line in the base region is tried, in base order,
//     skipping occurrences inside the match just grown; a match replaces
//     the best one so far if it is longer, or if the lowest count of a line
//     in it is lower than the best one's; the scan resumes after the end of
//     the longest match grown from the current side line.
//   - the count of a match is only lowered from its starting line's count
//     while it is above one.
//   - no common beginning or end is stripped first.

// hunk is one change of a side against the base: base lines [i1, i1+chg1)
// become side lines [i2, i2+chg2). A side's hunks are sorted and separated
// by at least one unchanged line.
type hunk struct {
	i1, chg1 int // base
	i2, chg2 int // side
}

// maxLineCount is the count above which a line does not start a match.
const maxLineCount = 64

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

// interner gives every distinct line a small integer.
type interner struct {
	ids map[string]int32
}

func newInterner(n int) *interner { return &interner{ids: make(map[string]int32, n)} }

func (in *interner) intern(lines []string) []int32 {
	out := make([]int32, len(lines))
	for i, l := range lines {
		id, ok := in.ids[l]
		if !ok {
			id = int32(len(in.ids))
			in.ids[l] = id
		}
		out[i] = id
	}
	return out
}

// alignment marks the lines a diff found changed: deleted base lines and
// inserted side lines. Unchanged lines pair up in order.
type alignment struct {
	a, b       []int32 // base and side, interned
	delA, insB []bool
}

// histogram is the scratch state of one histogram diff.
type histogram struct {
	alignment
	// Per base region, indexed by line id: how often the line occurs in the
	// region, and its first position there; next[i] is the position of the
	// next occurrence of base line i's text in the region, or -1.
	count, first []int32
	next         []int32
	fellBack     bool
	// ctx is checked every ctxEvery regions: a large file's diff stops
	// soon after a cancel (as a fall-back, whose result is not used).
	ctx   context.Context
	steps int
}

// ctxEvery is how many regions a histogram diff aligns between two checks
// of its context.
const ctxEvery = 1024

// diffIDs aligns base a with side b as git's merge does (histogram, then
// compaction); nIDs bounds the ids. ok is false where git would have used
// its classic diff instead.
// ok is also false once ctx is cancelled.
func diffIDs(ctx context.Context, a, b []int32, nIDs int) (al alignment, ok bool) {
	h := &histogram{
		ctx:       ctx,
		alignment: alignment{a: a, b: b, delA: make([]bool, len(a)), insB: make([]bool, len(b))},
		count:     make([]int32, nIDs),
		first:     make([]int32, nIDs),
		next:      make([]int32, len(a)),
	}
	h.diff(0, len(a), 0, len(b))
	if h.fellBack {
		return alignment{}, false
	}
	if !compact(h.a, h.delA, h.insB) || !compact(h.b, h.insB, h.delA) {
		return alignment{}, false
	}
	return h.alignment, true
}

// diff aligns base lines [lo1, hi1) with side lines [lo2, hi2).
func (h *histogram) diff(lo1, hi1, lo2, hi2 int) {
	for !h.fellBack {
		if h.steps++; h.steps%ctxEvery == 0 && h.ctx.Err() != nil {
			h.fellBack = true
			return
		}
		if lo1 == hi1 || lo2 == hi2 {
			for i := lo1; i < hi1; i++ {
				h.delA[i] = true
			}
			for j := lo2; j < hi2; j++ {
				h.insB[j] = true
			}
			return
		}
		s1, e1, s2, found := h.longestRare(lo1, hi1, lo2, hi2)
		if !found {
			if !h.fellBack {
				h.diff(lo1, hi1, lo2, lo2) // nothing in common: all changed
				h.diff(lo1, lo1, lo2, hi2)
			}
			return
		}
		h.diff(lo1, s1, lo2, s2)
		lo1, lo2 = e1, s2+(e1-s1)
	}
}

// longestRare finds the match the histogram diff keeps in the regions:
// base lines [s1, e1) equal to side lines from s2 on. found is false if the
// regions share no line (or only lines too frequent, then fellBack is set).
func (h *histogram) longestRare(lo1, hi1, lo2, hi2 int) (s1, e1, s2 int, found bool) {
	a, b := h.a, h.b
	for i := hi1 - 1; i >= lo1; i-- { // backwards, so first is the earliest
		id := a[i]
		if h.count[id] == 0 {
			h.next[i] = -1
		} else {
			h.next[i] = h.first[id]
		}
		h.first[id] = int32(i)
		h.count[id]++
	}
	defer func() {
		for i := lo1; i < hi1; i++ {
			h.count[a[i]] = 0
		}
	}()
	limit := int32(maxLineCount + 1) // the best match's count; lower wins
	common := false
	bestLen := 0 // length of the best match minus one, as compared
	for j := lo2; j < hi2; {
		resume := j + 1
		c := h.count[b[j]]
		if c == 0 {
			j = resume
			continue
		}
		common = true
		if c > limit {
			j = resume
			continue
		}
		for at := int(h.first[b[j]]); ; {
			as, bs, ae, be, rc := at, j, at, j, c
			for as > lo1 && bs > lo2 && a[as-1] == b[bs-1] {
				as, bs = as-1, bs-1
				if rc > 1 {
					rc = min(rc, h.count[a[as]])
				}
			}
			for ae+1 < hi1 && be+1 < hi2 && a[ae+1] == b[be+1] {
				ae, be = ae+1, be+1
				if rc > 1 {
					rc = min(rc, h.count[a[ae]])
				}
			}
			resume = max(resume, be+1)
			if bestLen < ae-as || rc < limit {
				s1, e1, s2, found = as, ae+1, bs, true
				bestLen, limit = ae-as, rc
			}
			np := int(h.next[at]) // the next occurrence outside this match
			for np >= 0 && np <= ae {
				np = int(h.next[np])
			}
			if np < 0 {
				break
			}
			at = np
		}
		j = resume
	}
	if common && limit > maxLineCount {
		h.fellBack = true
		return 0, 0, 0, false
	}
	return s1, e1, s2, found
}

// Compaction. A group of changed lines in one file can often slide up or
// down over equal lines without changing what the diff says; git moves
// each group to one canonical place: as far down as it goes, unless on its
// way it passed a change of the other file, in which case it stops at the
// last place where it sits next to such a change. Sliding can join two
// groups; then the joined group slides again. No indentation heuristic is
// applied: merges do not use it (checked against git merge-tree).
//
// Groups are taken between unchanged lines, so the k-th group of one file
// (possibly empty) faces the k-th group of the other: when a group of x
// slides over one line, the group it faces in o is the previous or next.

// span is a group: lines [start, end) of a file, all changed.
type span struct{ start, end int }

type changes []bool

func (c changes) at(i int) bool { return i >= 0 && i < len(c) && c[i] }

func (c changes) firstGroup() span {
	g := span{}
	for c.at(g.end) {
		g.end++
	}
	return g
}

func (c changes) nextGroup(g *span) bool {
	if g.end >= len(c) {
		return false
	}
	g.start = g.end + 1
	g.end = g.start
	for c.at(g.end) {
		g.end++
	}
	return true
}

func (c changes) prevGroup(g *span) bool {
	if g.start == 0 {
		return false
	}
	g.end = g.start - 1
	g.start = g.end
	for c.at(g.start - 1) {
		g.start--
	}
	return true
}

// slideUp moves group g one line up if the line above equals its last
// line, joining a group it then touches.
func (c changes) slideUp(lines []int32, g *span) bool {
	if g.start == 0 || lines[g.start-1] != lines[g.end-1] {
		return false
	}
	g.start--
	g.end--
	c[g.start], c[g.end] = true, false
	for c.at(g.start - 1) {
		g.start--
	}
	return true
}

// slideDown moves group g one line down if the line below equals its
// first line, joining a group it then touches.
func (c changes) slideDown(lines []int32, g *span) bool {
	if g.end >= len(c) || lines[g.start] != lines[g.end] {
		return false
	}
	c[g.start], c[g.end] = false, true
	g.start++
	g.end++
	for c.at(g.end) {
		g.end++
	}
	return true
}

// compact slides the groups of x (lines xl, changed xc) against the
// changes oc of the other file. It reports false if the two files' groups
// fell out of step, which would mean the alignment was inconsistent.
func compact(xl []int32, xc, oc changes) bool {
	g, og := xc.firstGroup(), oc.firstGroup()
	for {
		if g.end > g.start {
			var lowestEnd, endByOther int
			for {
				size := g.end - g.start
				for xc.slideUp(xl, &g) {
					if !oc.prevGroup(&og) {
						return false
					}
				}
				lowestEnd, endByOther = g.end, -1
				if og.end > og.start {
					endByOther = g.end
				}
				for xc.slideDown(xl, &g) {
					if !oc.nextGroup(&og) {
						return false
					}
					if og.end > og.start {
						endByOther = g.end
					}
				}
				if size == g.end-g.start {
					break
				}
			}
			if g.end != lowestEnd && endByOther >= 0 {
				for og.end == og.start {
					if !xc.slideUp(xl, &g) || !oc.prevGroup(&og) {
						return false
					}
				}
			}
		}
		if !xc.nextGroup(&g) {
			return true
		}
		if !oc.nextGroup(&og) {
			return false
		}
	}
}

// hunks lists the changes of an alignment; false if its unchanged lines do
// not pair up with equal lines (cannot happen; checked, since a wrong
// alignment would write a wrong file).
func (al alignment) hunks() ([]hunk, bool) {
	var hs []hunk
	i, j := 0, 0
	for i < len(al.delA) || j < len(al.insB) {
		if i < len(al.delA) && j < len(al.insB) && !al.delA[i] && !al.insB[j] {
			if al.a[i] != al.b[j] {
				return nil, false
			}
			i, j = i+1, j+1
			continue
		}
		h := hunk{i1: i, i2: j}
		for i < len(al.delA) && al.delA[i] {
			i++
		}
		for j < len(al.insB) && al.insB[j] {
			j++
		}
		h.chg1, h.chg2 = i-h.i1, j-h.i2
		if h.chg1 == 0 && h.chg2 == 0 {
			return nil, false
		}
		hs = append(hs, h)
	}
	return hs, true
}
