package gitrepo

import "sort"

// Why a line merge can be trusted to be git's.
//
// The hunk merge (xmerge.go) is git's, but the hunks it is given are ours:
// two diffs of the same pair of files can differ wherever lines repeat — a
// change can slide over equal lines, a moved block can be matched in its old
// or its new place — and git's merge (merge-ort) diffs with xdiff's
// *histogram* algorithm followed by xdiff's sliding heuristics, not with the
// Myers diff used here. Since xmerge treats touching hunks as a conflict and
// hunks one line apart as clean, any such difference near the other side's
// changes can turn git's conflict into our clean merge, or move where the
// other side's change lands.
//
// So a line merge is accepted only when its result cannot depend on how the
// files are aligned. The files are cut at anchors, and every stretch between
// two anchors must have been changed by at most one side, or by both in a
// way any diff must see as the same single hunk:
//
//  1. An anchor is a base line whose text occurs exactly once in the base,
//     once in ours and once in theirs, kept by both of our diffs, and that no
//     side moved lines across: no text that a side deleted before it was
//     inserted after it, or the other way round (in our diffs).
//  2. Between two consecutive anchors (or an anchor and an end of file) the
//     stretch of the base is compared as text with the same stretch of each
//     side. Unchanged by one side: the other side's stretch is taken. Changed
//     by both to the same text: taken only if that text shares no line with
//     the base stretch, so that any diff reports exactly one hunk spanning
//     the stretch on each side — the same hunk, which git merges cleanly.
//     Anything else is a conflict.
//
// Why git agrees. An anchor's line is unique in both files, so a diff can
// only keep it by pairing it with its one counterpart, and sliding can never
// move a change across it (that needs an equal line on the other side of
// the change). Any diff that pairs as many lines as it can keeps such a line
// unless another pairing crosses it; histogram diff grows its matches
// around the rarest lines, and the anchor is as rare as a line can be, so it
// is kept unless a crossing run of lines is preferred — which needs lines
// moved across the anchor, the case rule 1 excludes as far as our diff can
// see it. With every anchor kept, git's hunks stay between the same anchors
// as ours, and a stretch one side left unchanged gets no hunk from that
// side (an identical stretch between two kept lines is matched line by
// line). Then each of git's hunks is separated from the other side's by an
// unchanged anchor line, xdiff takes every hunk as it is, and whichever way
// it aligned a stretch, replacing it gives the same text: ours.
//
// The residual assumption, stated plainly: git does not pair lines across
// an anchor through a block of repeated lines that our diff kept on both
// sides of it. The differential tests (differential_test.go) probe exactly
// that with repeated lines and moved blocks; where a clean result is
// accepted, it has always been git's. Two more facts keep this independent
// of git's configuration: it never relies on xdiff's conflict refinement
// (regionSame), which merge.conflictStyle=diff3 turns off; and an ignored
// whitespace option cannot apply, since merge-ort passes none.

// anchor is a base line kept by both sides: base line k is ours line ko and
// theirs line kt.
type anchor struct{ k, ko, kt int }

// anchors returns the anchors of a three-way line merge, in file order.
func anchors(base, ours, theirs []string, dOurs, dTheirs sideDiff) []anchor {
	cb, co, ct := countLines(base), countLines(ours), countLines(theirs)
	var as []anchor
	for k, l := range base {
		ko, kt := dOurs.baseMatch[k], dTheirs.baseMatch[k]
		if ko >= 0 && kt >= 0 && cb[l] == 1 && co[l] == 1 && ct[l] == 1 {
			as = append(as, anchor{k, ko, kt})
		}
	}
	if len(as) == 0 {
		return nil
	}
	crossed := make([]int, len(as)+1) // difference array over anchor indexes
	markMoves(as, base, ours, dOurs, func(a anchor) int { return a.ko }, crossed)
	markMoves(as, base, theirs, dTheirs, func(a anchor) int { return a.kt }, crossed)
	var kept []anchor
	n := 0
	for i, a := range as {
		n += crossed[i]
		if n == 0 {
			kept = append(kept, a)
		}
	}
	return kept
}

func countLines(lines []string) map[string]int {
	c := make(map[string]int, len(lines))
	for _, l := range lines {
		c[l]++
	}
	return c
}

// span is where a text occurs among a side's deleted (base positions) or
// inserted (side positions) lines: first and last.
type span struct{ first, last int }

// markMoves marks the anchors that one side moved lines across (rule 1):
// for each text the side both deleted and inserted, the anchors between a
// deletion and an insertion of it. Anchors are sorted by base line and by
// side line alike, so each such set is a contiguous range of anchors, added
// to the difference array crossed.
func markMoves(as []anchor, base, side []string, d sideDiff, sidePos func(anchor) int, crossed []int) {
	del := map[string]span{}
	for i, j := range d.baseMatch {
		if j < 0 {
			widen(del, base[i], i)
		}
	}
	if len(del) == 0 {
		return
	}
	ins := map[string]span{}
	for j, i := range d.sideMatch {
		if i < 0 {
			widen(ins, side[j], j)
		}
	}
	mark := func(from, to int) { // anchors [from, to)
		if from < to {
			crossed[from]++
			crossed[to]--
		}
	}
	for text, ds := range del {
		is, ok := ins[text]
		if !ok {
			continue
		}
		// Deleted before the anchor, inserted after it: k > ds.first and
		// sidePos < is.last.
		mark(sort.Search(len(as), func(i int) bool { return as[i].k > ds.first }),
			sort.Search(len(as), func(i int) bool { return sidePos(as[i]) >= is.last }))
		// Inserted before, deleted after: sidePos > is.first and k < ds.last.
		mark(sort.Search(len(as), func(i int) bool { return sidePos(as[i]) > is.first }),
			sort.Search(len(as), func(i int) bool { return as[i].k >= ds.last }))
	}
}

func widen(m map[string]span, text string, pos int) {
	s, ok := m[text]
	if !ok {
		m[text] = span{pos, pos}
		return
	}
	s.first, s.last = min(s.first, pos), max(s.last, pos)
	m[text] = s
}

// anchoredMerge merges stretch by stretch between the anchors (rule 2) and
// returns the result, or false if some stretch was changed by both sides in
// a way a diff could split differently.
func anchoredMerge(base, ours, theirs []string, as []anchor) (string, bool) {
	var out []string
	pb, po, pt := 0, 0, 0 // start of the current stretch in each file
	stretch := func(eb, eo, et int) bool {
		b, o, t := base[pb:eb], ours[po:eo], theirs[pt:et]
		switch {
		case equalLines(b, o):
			out = append(out, t...)
		case equalLines(b, t):
			out = append(out, o...)
		case equalLines(o, t) && disjoint(b, o):
			out = append(out, o...)
		default:
			return false
		}
		return true
	}
	for _, a := range as {
		if !stretch(a.k, a.ko, a.kt) {
			return "", false
		}
		out = append(out, base[a.k])
		pb, po, pt = a.k+1, a.ko+1, a.kt+1
	}
	if !stretch(len(base), len(ours), len(theirs)) {
		return "", false
	}
	var n int
	for _, l := range out {
		n += len(l)
	}
	buf := make([]byte, 0, n)
	for _, l := range out {
		buf = append(buf, l...)
	}
	return string(buf), true
}

// disjoint reports whether no line of a occurs in b.
func disjoint(a, b []string) bool {
	if len(a) == 0 || len(b) == 0 {
		return true
	}
	in := make(map[string]bool, len(a))
	for _, l := range a {
		in[l] = true
	}
	for _, l := range b {
		if in[l] {
			return false
		}
	}
	return true
}
