package history

import "github.com/go-git/go-git/v5/plumbing"

// ancestorSet is every ancestor of one commit (tip), itself included,
// kept between merges. "X is an ancestor of tip" is a fact about two
// content hashes, true forever, whoever moves the branches: the set says
// nothing about a branch name. It serves the merges of a target branch
// that only moves forward: the next target's ancestors are the set plus
// the few commits merged since (extend), and the merge bases of the
// target and a PR are then found by walking from the PR alone
// (basesFromSide) — in W2 every PR forks from main's first commit, and
// git's walk from both sides covers all of main's history every merge.
type ancestorSet struct {
	tip  plumbing.Hash
	set  map[plumbing.Hash]struct{}
	hits int // merges served since the set was built
}

// ancestorsOf builds the set of a's ancestors from the graph (a in it).
func (g *commitGraph) ancestorsOf(a plumbing.Hash) *ancestorSet {
	s := &ancestorSet{tip: a, set: map[plumbing.Hash]struct{}{a: {}}}
	stack := []plumbing.Hash{a}
	for len(stack) > 0 {
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, p := range g.nodes[c].parents {
			if _, ok := s.set[p]; !ok {
				s.set[p] = struct{}{}
				stack = append(stack, p)
			}
		}
	}
	return s
}

// extend makes the set a's ancestors, a being in the graph, if a descends
// from the set's tip (or is it): the walk from a stops at the commits
// already in the set, and it reaches the tip exactly when a descends from
// it — every commit on a path from a down to the tip descends from the
// tip, so none of them is in the set before the tip is. If a does not
// descend from the tip the set is left as it was and extend returns false.
func (s *ancestorSet) extend(g *commitGraph, a plumbing.Hash) bool {
	if a == s.tip {
		return true
	}
	if _, ok := s.set[a]; ok { // an ancestor of the tip: the set holds more than a's ancestors
		return false
	}
	added := map[plumbing.Hash]struct{}{a: {}}
	stack := []plumbing.Hash{a}
	reached := false
	for len(stack) > 0 {
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, p := range g.nodes[c].parents {
			if _, ok := s.set[p]; ok {
				reached = reached || p == s.tip
				continue
			}
			if _, ok := added[p]; !ok {
				added[p] = struct{}{}
				stack = append(stack, p)
			}
		}
	}
	if !reached {
		return false
	}
	for h := range added {
		s.set[h] = struct{}{}
	}
	s.tip = a
	return true
}

// basesFromSide returns the best common ancestors of the set's tip and b
// (a commit of the graph), in the order paintDownToCommon returns them.
// It is paintDownToCommon with the marks of the tip's side read from the
// set instead of painted down from the tip: the walk from b, in
// decreasing generation order, takes a commit only after every commit of
// the walk that descends from it; a commit of the set not below a common
// ancestor already found is a best one, and marks its own ancestors as
// below it. The common ancestors are the set's commits that b reaches,
// so the ones found are exactly those below no other.
func (s *ancestorSet) basesFromSide(g *commitGraph, b plumbing.Hash) []plumbing.Hash {
	below := map[plumbing.Hash]bool{b: false} // queued: below a common ancestor found
	var q genQueue
	q.push(b, g.nodes[b].gen)
	live := 1 // queued commits not below a common ancestor
	var found []plumbing.Hash
	for live > 0 {
		c := q.pop()
		m := below[c]
		if !m {
			live--
			if _, ok := s.set[c]; ok {
				found = append(found, c)
				m = true
			}
		}
		for _, p := range g.nodes[c].parents {
			old, queued := below[p]
			switch {
			case !queued:
				below[p] = m
				q.push(p, g.nodes[p].gen)
				if !m {
					live++
				}
			case m && !old:
				below[p] = true
				live--
			}
		}
	}
	return found
}

// maxTips is how many targets' ancestor sets a history keeps: a
// repository's main and, say, one release branch.
const maxTips = 2

// seedWaitAfterMiss is how many misses pass before an ancestor set is
// built again, once one built served no merge.
const seedWaitAfterMiss = 16

// mergeBases: a and b are different commits of the graph. When a
// descends from a target of an earlier merge, its ancestor set is
// extended and the walk starts from b alone; else git's walk from both
// sides, and a's ancestor set is built for the merges to come.
func (r *History) mergeBases(a, b plumbing.Hash) []plumbing.Hash {
	g := r.graph
	for i, s := range r.tips {
		if s.extend(g, a) {
			s.hits++
			r.setHits++
			copy(r.tips[1:i+1], r.tips[:i])
			r.tips[0] = s
			return s.basesFromSide(g, b)
		}
	}
	found := g.paintDownToCommon(a, b)
	if len(r.tips) > 0 && r.tips[0].hits == 0 {
		// The last set built served nothing: the targets jump about.
		r.tips = r.tips[1:]
		r.seedWait = seedWaitAfterMiss
	}
	if r.seedWait > 0 {
		r.seedWait--
		return found
	}
	r.tips = append([]*ancestorSet{g.ancestorsOf(a)}, r.tips[:min(len(r.tips), maxTips-1)]...)
	return found
}

// AncestorSetHits is how many merge bases the ancestor sets served, for
// tests.
func (r *History) AncestorSetHits() int { return r.setHits }
