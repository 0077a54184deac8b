package gitrepo

import "strings"

// STOPGAP until the line-merge engine (branch engine) lands, which brings
// its own lineStyle and a real union merge: this file then goes.

// lineStyle is how mergeLines resolves the regions both sides changed.
type lineStyle int

const (
	lineStyleText  lineStyle = iota // a conflict (git's text driver)
	lineStyleUnion                  // ours' lines, then theirs' (git's union driver)
)

// unionStopgap is git's union merge in the cases where it is certain to be
// git's: the text merge is clean (union changes nothing then), or each
// side made one change, the two overlap and share no line, so that git's
// refinement of the conflict cannot split it — ours' new lines, then
// theirs'. Anything else is refused.
func unionStopgap(baseText, oursText, theirsText string) (string, string) {
	if merged, why := mergeLines(baseText, oursText, theirsText, lineStyleText); why == "" {
		return merged, ""
	}
	const refused = "content conflict in a file with merge=union (this union merge is not supported yet)"
	base, ours, theirs := splitLines(baseText), splitLines(oursText), splitLines(theirsText)
	dOurs, ok1 := diffLines(baseText, oursText, base, ours)
	dTheirs, ok2 := diffLines(baseText, theirsText, base, theirs)
	if !ok1 || !ok2 || len(dOurs.hunks) != 1 || len(dTheirs.hunks) != 1 {
		return "", refused
	}
	ho, ht := dOurs.hunks[0], dTheirs.hunks[0]
	if ho.i1 != ht.i1 || ho.chg1 != ht.chg1 || ho.i2 != ho.i1 || ht.i2 != ht.i1 {
		return "", refused // keep to one base range changed by both: nothing to get wrong
	}
	oSide, tSide := ours[ho.i2:ho.i2+ho.chg2], theirs[ht.i2:ht.i2+ht.chg2]
	seen := map[string]bool{}
	for _, l := range oSide {
		seen[l] = true
	}
	// A side line equal to a base line next to the region could let a diff
	// slide the change (and so the union's order): not decided here.
	for _, k := range []int{ho.i1 - 1, ho.i1 + ho.chg1} {
		if k < 0 || k >= len(base) {
			continue
		}
		for _, l := range append(append([]string(nil), oSide...), tSide...) {
			if l == base[k] {
				return "", refused
			}
		}
	}
	for _, l := range tSide {
		if seen[l] {
			return "", refused
		}
	}
	if len(oSide) == 0 || len(tSide) == 0 || !strings.HasSuffix(oSide[len(oSide)-1], "\n") {
		return "", refused
	}
	var b strings.Builder
	writeLines(&b, ours[:ho.i2])
	writeLines(&b, oSide)
	writeLines(&b, tSide)
	writeLines(&b, ours[ho.i2+ho.chg2:])
	return b.String(), ""
}
