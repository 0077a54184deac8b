package gitrepo

import "strings"

// The hunk merge: a port of xdiff's xdl_do_merge (git's xdiff/xmerge.c),
// with the settings git's merge uses — level XDL_MERGE_ZEALOUS, no favoured
// side — keeping its arithmetic exactly, quirks included, so that the same
// two hunk lists give the same outcome as in git:
//
//   - a hunk of one side that ends before the other side's next hunk
//     starts (strictly: at least one unchanged base line between them) is
//     taken as it is;
//   - hunks that overlap or touch (one ends where the other starts, two
//     insertions at the same place) conflict, unless they are the very same
//     change (same base range, same new lines);
//   - conflicting regions whose two sides read the same after all are
//     resolved (xdl_refine_conflicts finds no difference: mode 4);
//   - a region that extends into the previous one, in either side's
//     numbering, is merged with it, and becomes a conflict if they came from
//     different sides.
//
// Whether git finds the same hunks is another question: see anchors.go.

// Region modes, as xdmerge_t's.
const (
	regionConflict = 0 // both sides changed it
	regionOurs     = 1 // only ours changed it: take ours
	regionTheirs   = 2 // only theirs changed it: take theirs
	regionSame     = 4 // both changed it to the same lines (after refinement)
)

// region is xdmerge_t: base lines [i0, i0+chg0) are ours [i1, i1+chg1) and
// theirs [i2, i2+chg2).
type region struct {
	mode                         int
	i0, chg0, i1, chg1, i2, chg2 int
}

// mergeHunks combines the hunks of ours (h1) and theirs (h2) against a base
// of nBase lines into regions, as xdl_do_merge does before it refines
// conflicts. same(i1, i2, n) reports whether ours lines [i1, i1+n) equal
// theirs lines [i2, i2+n).
func mergeHunks(h1, h2 []hunk, nBase, nOurs, nTheirs int, same func(i1, i2, n int) bool) []region {
	var rs []region
	add := func(mode, i0, chg0, i1, chg1, i2, chg2 int) {
		if n := len(rs); n > 0 {
			m := &rs[n-1]
			if i1 <= m.i1+m.chg1 || i2 <= m.i2+m.chg2 {
				if mode != m.mode {
					m.mode = regionConflict
				}
				m.chg0 = i0 + chg0 - m.i0
				m.chg1 = i1 + chg1 - m.i1
				m.chg2 = i2 + chg2 - m.i2
				return
			}
		}
		rs = append(rs, region{mode, i0, chg0, i1, chg1, i2, chg2})
	}
	a, b := 0, 0
	for a < len(h1) && b < len(h2) {
		x1, x2 := h1[a], h2[b]
		if x1.i1+x1.chg1 < x2.i1 {
			add(regionOurs, x1.i1, x1.chg1, x1.i2, x1.chg2, x2.i2-x2.i1+x1.i1, x1.chg1)
			a++
			continue
		}
		if x2.i1+x2.chg1 < x1.i1 {
			add(regionTheirs, x2.i1, x2.chg1, x1.i2-x1.i1+x2.i1, x2.chg1, x2.i2, x2.chg2)
			b++
			continue
		}
		if x1.i1 != x2.i1 || x1.chg1 != x2.chg1 || x1.chg2 != x2.chg2 || !same(x1.i2, x2.i2, x1.chg2) {
			off := x1.i1 - x2.i1
			ffo := off + x1.chg1 - x2.chg1
			i0, i1, i2 := x1.i1, x1.i2, x2.i2
			if off > 0 {
				i0 -= off
				i1 -= off
			} else {
				i2 += off
			}
			chg0 := x1.i1 + x1.chg1 - i0
			chg1 := x1.i2 + x1.chg2 - i1
			chg2 := x2.i2 + x2.chg2 - i2
			if ffo < 0 {
				chg0 -= ffo
				chg1 -= ffo
			} else {
				chg2 += ffo
			}
			add(regionConflict, i0, chg0, i1, chg1, i2, chg2)
		}
		end1, end2 := x1.i1+x1.chg1, x2.i1+x2.chg1
		if end1 >= end2 {
			b++
		}
		if end2 >= end1 {
			a++
		}
	}
	for ; a < len(h1); a++ {
		x1 := h1[a]
		add(regionOurs, x1.i1, x1.chg1, x1.i2, x1.chg2, x1.i1+nTheirs-nBase, x1.chg1)
	}
	for ; b < len(h2); b++ {
		x2 := h2[b]
		add(regionTheirs, x2.i1, x2.chg1, x2.i1+nOurs-nBase, x2.chg1, x2.i2, x2.chg2)
	}
	return rs
}

// refine marks the conflicting regions whose two sides hold the same lines
// as resolved (regionSame), as xdl_refine_conflicts does; the others stay
// conflicts (git would narrow them down, but they remain conflicts). A
// region whose numbers fall outside the files — which xdiff's arithmetic
// could produce after merging regions — stays a conflict.
func refine(rs []region, ours, theirs []string) {
	for k := range rs {
		m := &rs[k]
		if m.mode != regionConflict || m.chg1 <= 0 || m.chg2 <= 0 {
			continue
		}
		if m.i1 < 0 || m.i2 < 0 || m.i1+m.chg1 > len(ours) || m.i2+m.chg2 > len(theirs) {
			continue
		}
		if equalLines(ours[m.i1:m.i1+m.chg1], theirs[m.i2:m.i2+m.chg2]) {
			m.mode = regionSame
		}
	}
}

// xmerge is xdl_merge over given hunks: the merged text and whether it is
// clean. A side without hunks gives the other side whole, as in xdiff.
func xmerge(base, ours, theirs []string, h1, h2 []hunk) (string, bool) {
	switch {
	case len(h1) == 0:
		return strings.Join(theirs, ""), true
	case len(h2) == 0:
		return strings.Join(ours, ""), true
	}
	same := func(i1, i2, n int) bool { return equalLines(ours[i1:i1+n], theirs[i2:i2+n]) }
	rs := mergeHunks(h1, h2, len(base), len(ours), len(theirs), same)
	refine(rs, ours, theirs)
	return fillMerge(rs, ours, theirs)
}

// fillMerge writes the result as xdl_fill_merge_buffer does for a clean
// merge: ours, with each theirs region replacing ours' lines of it. It
// reports false at the first conflict.
func fillMerge(rs []region, ours, theirs []string) (string, bool) {
	var b strings.Builder
	i := 0
	for _, m := range rs {
		switch m.mode {
		case regionConflict:
			return "", false
		case regionSame:
			continue // ours' lines, copied with what follows
		}
		if m.i1 < i || m.i1+m.chg1 > len(ours) || m.i2 < 0 || m.i2+m.chg2 > len(theirs) {
			return "", false // cannot happen for clean regions; never guess
		}
		writeLines(&b, ours[i:m.i1])
		if m.mode == regionOurs {
			writeLines(&b, ours[m.i1:m.i1+m.chg1])
		} else {
			writeLines(&b, theirs[m.i2:m.i2+m.chg2])
		}
		i = m.i1 + m.chg1
	}
	writeLines(&b, ours[i:])
	return b.String(), true
}

func writeLines(b *strings.Builder, lines []string) {
	for _, l := range lines {
		b.WriteString(l)
	}
}

func equalLines(a, b []string) bool {
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
