package gitobj

import (
	"container/list"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Objects kept between merges: go-git's encoded objects (what it read from
// loose files and packs), and our parsed commits and trees. git objects are
// immutable, named by their content's hash, so a kept object is right for
// as long as it is kept; what the cache saves is go-git's per-read open(2),
// zlib inflate and parse of loose objects, and the re-inflation of delta
// chains in packs.
//
// All the repositories of a Repos share one budget in bytes, with LRU
// eviction: a merger serves thousands of repositories, and caps per
// repository multiply by them (20 repositories with a 16 MiB go-git cache
// and 130k parsed tree entries each reached 465-483 MB in the W2 bench). A
// merge's working set is small (the trees on the changed paths of three or
// four commits, their commits), so a repository the merger moved on from
// simply ages out.

// DefaultCacheBytes is the budget of a Cache when the Repos' Options
// leave it zero. W2 at 10,000 sagas filled 64 MiB with root trees that
// no merge reads again (each merge writes its repository's next one),
// and the heap's GC goal doubled that: 459 MB peak RSS for the whole
// inproc run against 369 MB with 24 MiB, at the same CPU per saga
// (docs/performance-history.md, issue 19, round two).
const DefaultCacheBytes = 24 << 20

// Kinds of cached values; a hash is cached once per kind and repository.
const (
	kindEncoded uint8 = iota // go-git's plumbing.EncodedObject
	kindCommit               // *object.Commit
	kindTree                 // a parsed tree (package engine's)
)

// cacheKey: the repository is part of the key, never just the hash: a hash
// present in one repository says nothing about another (a commit missing
// from a repository must stay missing there).
type cacheKey struct {
	repo uint64
	kind uint8
	hash plumbing.Hash
}

type cacheItem struct {
	key  cacheKey
	val  any
	size int64
}

// Cache is a byte-bounded LRU, safe for concurrent use (repositories
// are merged in parallel, each under its own mutex).
type Cache struct {
	mu    sync.Mutex
	limit int64
	used  int64
	lru   list.List // front: most recently used; values *cacheItem
	items map[cacheKey]*list.Element
}

// NewCache returns a cache of at most limit bytes.
func NewCache(limit int64) *Cache {
	return &Cache{limit: limit, items: map[cacheKey]*list.Element{}}
}

func (c *Cache) get(k cacheKey) (any, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[k]
	if !ok {
		return nil, false
	}
	c.lru.MoveToFront(e)
	return e.Value.(*cacheItem).val, true
}

// put keeps v, evicting the least recently used values beyond the budget.
// A value larger than an eighth of the budget is not kept: it would flush
// the working set of every other repository.
func (c *Cache) put(k cacheKey, v any, size int64) {
	if size > c.limit/8 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[k]; ok {
		c.lru.MoveToFront(e)
		return
	}
	c.items[k] = c.lru.PushFront(&cacheItem{key: k, val: v, size: size})
	c.used += size
	for c.used > c.limit {
		last := c.lru.Back()
		it := last.Value.(*cacheItem)
		c.lru.Remove(last)
		delete(c.items, it.key)
		c.used -= it.size
	}
}

// dropRepo forgets one repository's values (go-git's Clear).
func (c *Cache) dropRepo(repo uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for e := c.lru.Front(); e != nil; {
		next := e.Next()
		if it := e.Value.(*cacheItem); it.key.repo == repo {
			c.lru.Remove(e)
			delete(c.items, it.key)
			c.used -= it.size
		}
		e = next
	}
}

// Bytes reports the bytes accounted for; for tests.
func (c *Cache) Bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used
}

// repoCache is one repository's view of the shared cache.
type repoCache struct {
	c    *Cache
	repo uint64
}

// Estimated heap bytes of the cached values, so that the budget bounds
// the heap rather than the payload. A parsed tree measured 115 bytes an
// entry with 9-byte names at 500 entries, 72 at 50 (Go 1.26 maps: slots of
// a string header and an entry, load factor, growth by doubling).
const (
	itemOverhead  = 128 // list element, item, map slot
	treeOverhead  = 400 // an empty map
	entryOverhead = 104 // a tree entry's slot; plus its name's bytes
)

func (rc repoCache) commit(h plumbing.Hash) (*object.Commit, bool) {
	v, ok := rc.c.get(cacheKey{rc.repo, kindCommit, h})
	if !ok {
		return nil, false
	}
	return v.(*object.Commit), true
}

func (rc repoCache) putCommit(h plumbing.Hash, c *object.Commit) {
	size := itemOverhead + 256 + len(c.Message) + len(c.PGPSignature) +
		len(c.Author.Name) + len(c.Author.Email) + len(c.Committer.Name) + len(c.Committer.Email) +
		len(c.ParentHashes)*len(plumbing.Hash{}) + len(c.MergeTag) + len(c.Encoding)
	rc.c.put(cacheKey{rc.repo, kindCommit, h}, c, int64(size))
}

// tree returns a parsed tree; it is shared: callers must not modify it.
func (rc repoCache) tree(h plumbing.Hash) (any, bool) {
	return rc.c.get(cacheKey{rc.repo, kindTree, h})
}

// putTree keeps a parsed tree of n entries whose names hold nameBytes.
func (rc repoCache) putTree(h plumbing.Hash, t any, n, nameBytes int) {
	size := itemOverhead + treeOverhead + n*entryOverhead + nameBytes
	rc.c.put(cacheKey{rc.repo, kindTree, h}, t, int64(size))
}

// goGitCache adapts the view to go-git's cache.Object, which its storage
// consults before reading an object and fills after.
type goGitCache repoCache

func (g goGitCache) Put(o plumbing.EncodedObject) {
	g.c.put(cacheKey{g.repo, kindEncoded, o.Hash()}, o, itemOverhead+o.Size())
}

func (g goGitCache) Get(h plumbing.Hash) (plumbing.EncodedObject, bool) {
	v, ok := g.c.get(cacheKey{g.repo, kindEncoded, h})
	if !ok {
		return nil, false
	}
	return v.(plumbing.EncodedObject), true
}

func (g goGitCache) Clear() { g.c.dropRepo(g.repo) }
