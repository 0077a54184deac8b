package gitrepo

import "sort"

// The commit graphs of all the repositories of a Repos share one bound:
// each is capped (history.maxGraphNodes), but a merger serves thousands of
// repositories and per-repository caps multiply. When the graphs together
// hold more than the bound, those of the repositories merged into least
// recently are dropped; the next merge into one rebuilds it from the
// history (a cold merge, PERFORMANCE.md).

// maxGraphNodesTotal: about 300 bytes a commit (measured with the trailer index it once had), so
// ~150 MB; one repository at maxGraphNodes fits.
const maxGraphNodesTotal = 500_000

// graphSweepEvery: Opens between two checks of the total, so that a check
// over thousands of repositories is paid once in many merges.
const graphSweepEvery = 64

// noteUse marks r as used now and, every graphSweepEvery calls, bounds the
// graphs. Callers hold rs.mu.
func (rs *Repos) noteUse(r *Repo) {
	rs.clock++
	r.lastUse = rs.clock
	if rs.clock%graphSweepEvery == 0 {
		rs.sweepGraphs()
	}
}

// sweepGraphs drops the least recently used repositories' graphs until the
// rest hold at most rs.graphLimit commits. A repository being merged into
// (its mutex held) is in use: it is neither counted nor dropped. Callers
// hold rs.mu; r.mu is only tried, never waited for, so the order of the
// two locks cannot deadlock.
func (rs *Repos) sweepGraphs() {
	type held struct {
		r     *Repo
		nodes int
	}
	var hs []held
	total := 0
	for _, r := range rs.repos {
		if !r.mu.TryLock() {
			continue
		}
		if n := r.history.Nodes(); n > 0 {
			hs = append(hs, held{r, n})
			total += n
		} else {
			r.mu.Unlock()
		}
	}
	sort.Slice(hs, func(i, j int) bool { return hs[i].r.lastUse < hs[j].r.lastUse })
	for _, h := range hs {
		if total > rs.graphLimit {
			h.r.history.Reset()
			total -= h.nodes
		}
		h.r.mu.Unlock()
	}
}
