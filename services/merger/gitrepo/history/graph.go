package history

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/prsaga/prsaga/services/merger/gitrepo/gitobj"
)

// History answers questions about one repository's history — merge
// bases, reachability, rev-list — from its commit graph, kept in memory
// between merges. Not safe for concurrent use: its owner (gitrepo.Repo)
// serialises the merges of a repository. The walks check their context
// every ctxEvery commits.
type History struct {
	s     *gitobj.Store
	graph *commitGraph
	// tips are the ancestor sets of the last targets merged into
	// (ancestors.go), most recent first; seedWait counts the misses to let
	// pass before building one again, when the last one built served no
	// merge (targets that jump about: merge-check's replays).
	tips     []*ancestorSet
	seedWait int
	setHits  int // merge bases the ancestor sets served, for tests
}

// New is an empty history of the repository whose objects s holds.
func New(s *gitobj.Store) *History {
	return &History{s: s, graph: newCommitGraph()}
}

// Nodes is how many commits the graph holds.
func (r *History) Nodes() int { return len(r.graph.nodes) }

// Reset drops the graph; the next merge rebuilds it from the history.
func (r *History) Reset() { r.graph, r.tips = newCommitGraph(), nil }

// Disable drops the graph and serves every later question by go-git's
// plain walks, as for a history beyond the graph's bound; for tests.
func (r *History) Disable() { r.graph, r.tips = &commitGraph{tooLarge: true}, nil }

// Added puts a commit just made into the graph, if its parents are in it
// or can be read; the next merge into its branch starts from it.
func (r *History) Added(ctx context.Context, c *object.Commit) {
	if r.ensureGraph(ctx, c.ParentHashes...) == nil {
		r.graph.add(c)
	}
}

// ctxEvery is how many commits a walk reads between two checks of its
// context: a check per commit would cost more than reading a cached one.
const ctxEvery = 256

// commitGraph is a repository's commit graph as far as merges have needed
// it, kept in memory between merges: each commit's parents and generation
// number (1 for a root, else 1 + the largest of its parents'), as git's
// commit-graph file has them.
//
// Invariant: a commit is in the graph only with all its ancestors, so the
// graph holds the whole history of every commit it holds. A commit enters
// the graph only once all its parents are in; commits never change, so
// nothing in it ever goes stale, whoever moves the branches (a forced push
// only leaves commits no branch reaches, which cost memory, not
// correctness).
type commitGraph struct {
	nodes map[plumbing.Hash]graphNode
	// tooLarge: a history did not fit; the repository is served by the
	// plain walks from then on, without trying again every merge.
	tooLarge bool
}

type graphNode struct {
	parents []plumbing.Hash
	gen     uint32
}

// maxGraphNodes bounds a repository's graph (about 100 bytes a commit).
// A history beyond it is served by go-git's merge base
// (FallbackMergeBases), as before the graph existed.
const maxGraphNodes = 250_000

// ErrGraphTooLarge: the history does not fit in maxGraphNodes.
var ErrGraphTooLarge = errors.New("history too large for the in-memory commit graph")

func newCommitGraph() *commitGraph {
	return &commitGraph{nodes: map[plumbing.Hash]graphNode{}}
}

// add puts a commit whose parents are all in the graph.
func (g *commitGraph) add(c *object.Commit) {
	var gen uint32
	for _, p := range c.ParentHashes {
		gen = max(gen, g.nodes[p].gen)
	}
	g.nodes[c.Hash] = graphNode{parents: c.ParentHashes, gen: gen + 1}
}

// ensureGraph puts the commits hs and their whole history into the graph
// (reading only the commits not in it yet); on success all of them are
// in.
func (r *History) ensureGraph(ctx context.Context, hs ...plumbing.Hash) error {
	g := r.graph
	missing := false
	for _, h := range hs {
		if _, ok := g.nodes[h]; !ok {
			missing = true
		}
	}
	if !missing {
		return nil
	}
	if g.tooLarge {
		return ErrGraphTooLarge
	}
	if len(g.nodes) >= maxGraphNodes {
		*g = *newCommitGraph() // start over from what merges need now
	}
	// Depth-first, a commit added once its parents are: pending holds the
	// commits read whose parents are not all in yet.
	pending := map[plumbing.Hash]*object.Commit{}
	stack := append([]plumbing.Hash(nil), hs...)
	for n := 0; len(stack) > 0; n++ {
		if n%ctxEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		top := stack[len(stack)-1]
		if _, ok := g.nodes[top]; ok {
			stack = stack[:len(stack)-1]
			continue
		}
		c, ok := pending[top]
		if !ok {
			if len(g.nodes)+len(pending) >= maxGraphNodes {
				*g = commitGraph{tooLarge: true}
				return ErrGraphTooLarge
			}
			var err error
			if c, ok = r.s.CachedCommit(top); !ok {
				if c, err = r.s.ReadCommit(top); err != nil {
					return err
				}
			}
			pending[top] = c
		}
		ready := true
		for _, p := range c.ParentHashes {
			if _, in := g.nodes[p]; !in {
				ready = false
				stack = append(stack, p)
			}
		}
		if ready {
			g.add(c)
			delete(pending, top)
			stack = stack[:len(stack)-1]
		}
	}
	return nil
}

// MergeBases returns the best common ancestors of a and b (`git merge-base
// --all`): one for an ordinary history, several for a criss-cross, none
// for unrelated histories.
//
// It is git's paint_down_to_common on the in-memory graph, walking in
// decreasing generation order: a commit is taken only after every commit
// of the walk that descends from it, so its marks (reached from a, from b,
// below a common ancestor already found) are final when taken, and the
// common ancestors found are exactly those below no other one — no
// date heuristics, no clean-up pass. It reads the commits since the fork,
// and only those not seen by an earlier merge.
func (r *History) MergeBases(ctx context.Context, a, b *object.Commit) ([]*object.Commit, error) {
	if err := r.ensureGraph(ctx, a.Hash, b.Hash); err != nil {
		return r.FallbackMergeBases(a, b, err)
	}
	var found []plumbing.Hash
	if a.Hash == b.Hash {
		found = []plumbing.Hash{a.Hash}
	} else {
		found = r.mergeBases(a.Hash, b.Hash)
	}
	bases := make([]*object.Commit, 0, len(found))
	for _, h := range found {
		c, err := r.s.Commit(h)
		if err != nil {
			return nil, err
		}
		bases = append(bases, c)
	}
	return bases, nil
}

// FallbackMergeBases is go-git's merge base, for histories beyond the
// graph's bound (why is ErrGraphTooLarge; any other error is returned).
// It reads the newer commit's whole history every time, without checking
// a context: go-git's walk takes none.
func (r *History) FallbackMergeBases(a, b *object.Commit, why error) ([]*object.Commit, error) {
	if !errors.Is(why, ErrGraphTooLarge) {
		return nil, fmt.Errorf("merge base of %s and %s: %w", a.Hash, b.Hash, why)
	}
	// go-git's walk needs commits bound to the storage.
	ga, err := object.GetCommit(r.s.Storer(), a.Hash)
	if err != nil {
		return nil, fmt.Errorf("merge base of %s and %s: %w", a.Hash, b.Hash, err)
	}
	gb, err := object.GetCommit(r.s.Storer(), b.Hash)
	if err != nil {
		return nil, fmt.Errorf("merge base of %s and %s: %w", a.Hash, b.Hash, err)
	}
	bases, err := ga.MergeBase(gb)
	if err != nil {
		return nil, fmt.Errorf("merge base of %s and %s: %w", a.Hash, b.Hash, err)
	}
	return bases, nil
}

// Marks of paintDownToCommon.
const (
	fromA uint8 = 1 << iota
	fromB
	belowCommon // below a common ancestor found: not a best one
)

// paintDownToCommon: a and b are different commits of the graph.
func (g *commitGraph) paintDownToCommon(a, b plumbing.Hash) []plumbing.Hash {
	marks := map[plumbing.Hash]uint8{a: fromA, b: fromB}
	var q genQueue
	q.push(a, g.nodes[a].gen)
	q.push(b, g.nodes[b].gen)
	live := 2 // queued commits not marked belowCommon
	var found []plumbing.Hash
	for live > 0 {
		c := q.pop()
		m := marks[c]
		if m&belowCommon == 0 {
			live--
			if m&(fromA|fromB) == fromA|fromB {
				found = append(found, c)
				m |= belowCommon
			}
		}
		for _, p := range g.nodes[c].parents {
			old := marks[p]
			now := old | m
			if now == old {
				continue
			}
			marks[p] = now
			switch {
			case old == 0: // not queued yet; its generation is below c's, so not taken yet either
				q.push(p, g.nodes[p].gen)
				if now&belowCommon == 0 {
					live++
				}
			case old&belowCommon == 0 && now&belowCommon != 0:
				live--
			}
		}
	}
	return found
}

// genQueue is a max-heap of commits by generation, then hash. Each entry
// carries its generation (a graph lookup per comparison cost a tenth of a
// merge-base walk over 1,000 commits) and the heap is typed (container/heap
// boxes every hash pushed).
type genQueue []genItem

type genItem struct {
	gen uint32
	h   plumbing.Hash
}

// before: x is taken before y.
func (x genItem) before(y genItem) bool {
	if x.gen != y.gen {
		return x.gen > y.gen
	}
	return string(x.h[:]) > string(y.h[:])
}

func (q *genQueue) push(h plumbing.Hash, gen uint32) {
	*q = append(*q, genItem{gen: gen, h: h})
	s := *q
	for i := len(s) - 1; i > 0; {
		parent := (i - 1) / 2
		if !s[i].before(s[parent]) {
			break
		}
		s[i], s[parent] = s[parent], s[i]
		i = parent
	}
}

func (q *genQueue) pop() plumbing.Hash {
	s := *q
	top := s[0].h
	last := len(s) - 1
	s[0] = s[last]
	s = s[:last]
	for i := 0; ; {
		first, l, r := i, 2*i+1, 2*i+2
		if l < len(s) && s[l].before(s[first]) {
			first = l
		}
		if r < len(s) && s[r].before(s[first]) {
			first = r
		}
		if first == i {
			break
		}
		s[i], s[first] = s[first], s[i]
		i = first
	}
	*q = s
	return top
}
