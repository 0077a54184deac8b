package engine

import (
	"context"
	"strings"
)

// The three-way line merge, with the rules of git's merge (merge-ort's
// content merge: xdiff's "zealous" level, no favoured side), stated in our
// own terms:
//
//   - Each side's changes are its hunks against the base (linediff.go).
//   - Hunks of the two sides that overlap or touch in the base — one ends
//     where the other starts, or both insert at the same place — belong to
//     one cluster, and so, transitively, does every hunk touching a member:
//     chained overlaps make one region.
//   - A cluster holding the hunks of one side only is that side's change,
//     taken as it is. A change separated from every change of the other
//     side by at least one unchanged base line is therefore taken.
//   - A cluster of one hunk per side, changing the same base lines to the
//     same lines, is taken once.
//   - Any other cluster is a conflict, unless the lines the two sides hold
//     in its span read the same and neither is empty: then it is resolved
//     (a conflict whose sides are both empty stays a conflict, as in git).
//
// With the union style (git's merge=union attribute) a conflict is instead
// resolved by writing ours' lines, then theirs'. git first narrows each
// conflict down by diffing its two sides — lines common to both are
// written once — and joins two conflicts at most three lines apart (those
// lines then appear in both); a side's last line that lacks a newline gets
// one before the other side's lines follow. Every rule is held to git by
// the differential corpus (gitrepo/corpus_test.go).

// lineStyle is how conflicting regions are resolved.
type lineStyle int

const (
	// lineStyleText is git's default text merge: a conflict stays one.
	lineStyleText lineStyle = iota
	// lineStyleUnion is git's merge=union: ours' lines, then theirs'.
	lineStyleUnion
	// lineStyleDiff3 is the text merge with merge.conflictStyle diff3 or
	// zdiff3: a cluster whose two sides read the same (but change
	// different base lines) is not resolved; it stays a conflict.
	lineStyleDiff3
)

// joinGap is the most unchanged lines between two conflicts that git's
// zealous merge still joins into one.
const joinGap = 3

type regionKind int

const (
	takeOurs regionKind = iota
	takeTheirs
	resolved // both sides read the same: ours' lines are kept
	conflicting
)

// region is one cluster's span in ours (lines [o0, o1)) and in theirs
// ([t0, t1)), and what the merge writes there.
type region struct {
	kind           regionKind
	o0, o1, t0, t1 int
}

// mergeLines merges three texts line by line: the merged text, or why
// there is none (then the path is a conflict). Once ctx is cancelled its
// answer means nothing: the caller checks ctx after it.
func mergeLines(ctx context.Context, baseText, oursText, theirsText string, style lineStyle) (merged, why string) {
	switch {
	case oursText == baseText || oursText == theirsText:
		return theirsText, ""
	case theirsText == baseText:
		return oursText, ""
	}
	base, ours, theirs := splitLines(baseText), splitLines(oursText), splitLines(theirsText)
	if middle(base, ours) > maxLineMergeDiff || middle(base, theirs) > maxLineMergeDiff {
		return "", "content changed on both sides; too many changed lines to merge line by line"
	}
	in := newInterner(len(base) + len(ours)/4 + len(theirs)/4)
	b, o, t := in.intern(base), in.intern(ours), in.intern(theirs)
	n := len(in.ids)
	const noAlign = "content changed on both sides; lines repeated more than 64 times, which git aligns with another diff (not merged line by line)"
	alO, ok1 := diffIDs(ctx, b, o, n)
	alT, ok2 := diffIDs(ctx, b, t, n)
	if !ok1 || !ok2 {
		return "", noAlign
	}
	h1, ok1 := alO.hunks()
	h2, ok2 := alT.hunks()
	if !ok1 || !ok2 {
		return "", "content changed on both sides; the line diff failed"
	}
	rs := clusters(h1, h2, o, t)
	if style == lineStyleUnion {
		var ok bool
		if rs, ok = narrowConflicts(ctx, rs, o, t, n); !ok {
			return "", noAlign
		}
		rs = joinConflicts(rs)
	} else {
		for _, r := range rs {
			if r.kind == conflicting {
				return "", "content conflict: both sides changed the same or adjacent lines"
			}
			if r.kind == resolved && style == lineStyleDiff3 {
				return "", "content conflict: both sides changed the same or adjacent lines alike, from different base lines (with merge.conflictStyle diff3, git leaves it a conflict)"
			}
		}
	}
	return fill(rs, base, ours, theirs), ""
}

// clusters merges the hunk lists of ours (h1) and theirs (h2) into
// regions, by the rules above. o and t are the sides' interned lines. A
// cluster of two identical hunks gives no region: ours' lines are right.
func clusters(h1, h2 []hunk, o, t []int32) []region {
	var rs []region
	d1, d2 := 0, 0 // side line minus base line, after the hunks so far
	i, j := 0, 0
	for i < len(h1) || j < len(h2) {
		start := 0
		if j == len(h2) || i < len(h1) && h1[i].i1 <= h2[j].i1 {
			start = h1[i].i1
		} else {
			start = h2[j].i1
		}
		end := start
		o0, t0 := start+d1, start+d2
		fi, fj := i, j
		for grown := true; grown; {
			grown = false
			if i < len(h1) && h1[i].i1 <= end {
				end = max(end, h1[i].i1+h1[i].chg1)
				d1 = h1[i].i2 + h1[i].chg2 - h1[i].i1 - h1[i].chg1
				i, grown = i+1, true
			}
			if j < len(h2) && h2[j].i1 <= end {
				end = max(end, h2[j].i1+h2[j].chg1)
				d2 = h2[j].i2 + h2[j].chg2 - h2[j].i1 - h2[j].chg1
				j, grown = j+1, true
			}
		}
		r := region{o0: o0, o1: end + d1, t0: t0, t1: end + d2}
		switch {
		case j == fj:
			r.kind = takeOurs
		case i == fi:
			r.kind = takeTheirs
		case i == fi+1 && j == fj+1 && sameHunk(h1[fi], h2[fj], o, t):
			continue
		case r.o1 > r.o0 && r.t1 > r.t0 && equalIDs(o[r.o0:r.o1], t[r.t0:r.t1]):
			r.kind = resolved
		default:
			r.kind = conflicting
		}
		rs = append(rs, r)
	}
	return rs
}

// sameHunk reports whether two hunks make the same change.
func sameHunk(x, y hunk, o, t []int32) bool {
	return x.i1 == y.i1 && x.chg1 == y.chg1 && equalIDs(o[x.i2:x.i2+x.chg2], t[y.i2:y.i2+y.chg2])
}

// narrowConflicts replaces each conflict whose sides are both non-empty by
// the differences of its two sides (git's refinement): a conflict per hunk
// of the diff of ours' lines against theirs'. ok is false if that diff
// cannot be git's (see diffIDs).
func narrowConflicts(ctx context.Context, rs []region, o, t []int32, nIDs int) ([]region, bool) {
	var out []region
	for _, r := range rs {
		if r.kind != conflicting || r.o1 == r.o0 || r.t1 == r.t0 {
			out = append(out, r)
			continue
		}
		al, ok := diffIDs(ctx, o[r.o0:r.o1], t[r.t0:r.t1], nIDs)
		if !ok {
			return nil, false
		}
		hs, ok := al.hunks()
		if !ok {
			return nil, false
		}
		if len(hs) == 0 {
			out = append(out, region{kind: resolved, o0: r.o0, o1: r.o1, t0: r.t0, t1: r.t1})
		}
		for _, h := range hs {
			out = append(out, region{kind: conflicting,
				o0: r.o0 + h.i1, o1: r.o0 + h.i1 + h.chg1, t0: r.t0 + h.i2, t1: r.t0 + h.i2 + h.chg2})
		}
	}
	return out, true
}

// joinConflicts joins consecutive conflicts at most joinGap ours lines
// apart into one.
func joinConflicts(rs []region) []region {
	var out []region
	for _, r := range rs {
		if n := len(out); n > 0 && r.kind == conflicting && out[n-1].kind == conflicting && r.o0-out[n-1].o1 <= joinGap {
			out[n-1].o1, out[n-1].t1 = r.o1, r.t1
			continue
		}
		out = append(out, r)
	}
	return out
}

// fill writes the merge: ours, with theirs' lines where theirs' change is
// taken, and — union style — both sides' lines at a conflict.
func fill(rs []region, base, ours, theirs []string) string {
	var b strings.Builder
	i := 0 // next ours line to write
	for _, r := range rs {
		switch r.kind {
		case resolved:
			continue // ours' lines, written with what follows
		case takeOurs:
			writeLines(&b, ours[i:r.o1])
		case takeTheirs:
			writeLines(&b, ours[i:r.o0])
			writeLines(&b, theirs[r.t0:r.t1])
		case conflicting: // union style only
			writeLines(&b, ours[i:r.o1])
			if r.o1 > r.o0 && !strings.HasSuffix(ours[r.o1-1], "\n") {
				if crlfNeeded(base, ours, theirs, r) {
					b.WriteByte('\r')
				}
				b.WriteByte('\n')
			}
			writeLines(&b, theirs[r.t0:r.t1])
		}
		i = r.o1
	}
	writeLines(&b, ours[i:])
	return b.String()
}

// crlfNeeded decides the line ending git adds after ours' unterminated last
// line in a union: CRLF if the line before the region in ours, else in
// theirs, else the base's first line ends in CRLF — the first of them that
// tells (a file's last line without an ending tells nothing by itself).
func crlfNeeded(base, ours, theirs []string, r region) bool {
	v := endsCRLF(ours, max(r.o0-1, 0))
	if v != 0 {
		v = endsCRLF(theirs, max(r.t0-1, 0))
	}
	if v != 0 {
		v = endsCRLF(base, 0)
	}
	return v == 1
}

// endsCRLF tells whether line i of f ends in CRLF: 1 yes, 0 no, -1 cannot
// tell (an empty file, or a lone unterminated line). An unterminated last
// line is judged by the line before it.
func endsCRLF(f []string, i int) int {
	crlf := func(l string) int {
		if len(l) > 1 && l[len(l)-2] == '\r' {
			return 1
		}
		return 0
	}
	switch {
	case i < len(f)-1:
		return crlf(f[i])
	case len(f) == 0:
		return -1
	case strings.HasSuffix(f[i], "\n"):
		return crlf(f[i])
	case i == 0:
		return -1
	}
	return crlf(f[i-1])
}

// middle counts the lines of a and b outside their common beginning and end.
func middle(a, b []string) int {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	return len(a) + len(b) - 2*(pre+suf)
}

func writeLines(b *strings.Builder, lines []string) {
	for _, l := range lines {
		b.WriteString(l)
	}
}

func equalIDs(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
