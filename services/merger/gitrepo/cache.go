package gitrepo

import (
	"github.com/go-git/go-git/v5/plumbing"
)

// Parsed objects kept between merges. git objects are immutable, named by
// their content's hash, so a parsed commit or tree is right for as long
// as it is kept; what the caches save is go-git's per-read open(2), zlib
// inflate and parse of loose objects (a fifth of all allocations of a W2
// run, and most of the merger's CPU).

// Per repository and generation: a repository's caches hold at most twice
// these.
const (
	commitCacheSize = 4096    // commits
	treeCacheSize   = 1 << 16 // tree entries, summed over the trees
)

// genCache is a two-generation cache: entries go into the current
// generation; when it is full it becomes the old one and the previous old
// one is dropped; a hit in the old generation is moved to the current one.
// It approximates an LRU at the cost of two map operations. Not safe for
// concurrent use (callers hold the repository's mutex).
type genCache[V any] struct {
	limit    int
	weight   func(V) int
	cur, old map[plumbing.Hash]V
	curW     int
}

func newGenCache[V any](limit int, weight func(V) int) *genCache[V] {
	return &genCache[V]{limit: limit, weight: weight, cur: map[plumbing.Hash]V{}}
}

func (c *genCache[V]) get(h plumbing.Hash) (V, bool) {
	if v, ok := c.cur[h]; ok {
		return v, true
	}
	v, ok := c.old[h]
	if ok {
		delete(c.old, h)
		c.put(h, v)
	}
	return v, ok
}

func (c *genCache[V]) put(h plumbing.Hash, v V) {
	if _, ok := c.cur[h]; ok {
		return
	}
	w := c.weight(v)
	if c.curW+w > c.limit && len(c.cur) > 0 {
		c.old, c.cur, c.curW = c.cur, map[plumbing.Hash]V{}, 0
	}
	c.cur[h] = v
	c.curW += w
}
