package gitlog

import (
	"errors"
	"fmt"
	"io/fs"
	"sync"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/prsaga/prsaga/platform/gitloose"
)

// Bounds of what a Reader keeps between calls.
const (
	// maxOpen bounds the repositories kept open; the least recently used
	// one is dropped (and reopened when asked for again).
	maxOpen = 32
	// objectCache is go-git's object cache of one open repository (its
	// default is 96 MiB): only the merge commits themselves pass through
	// it, each once, the walk's commits are kept decoded in commits below.
	objectCache = 256 * cache.KiByte
	// commitBudget bounds, in message bytes plus a fixed cost per commit,
	// one generation of the decoded commits of all repositories (two are
	// kept: at most twice this). With the closures (closure.go) a merge
	// reads only its own commits and the previous merge (decoded just
	// before); the rest serve the walk of a merge out of order. 16 MiB
	// held about 20 MB of heap at 10,000 sagas for no gain.
	commitBudget = 4 << 20
	commitCost   = 512
)

// repo is one bare repository kept open between calls: go-git's storage
// loads the pack indexes once (a storage opened per call loads every .idx
// file again before its first packed object), and keeps an object cache.
// go-git is not safe for concurrent use: mu serialises the calls on one
// repository.
type repo struct {
	dir  string
	used uint64 // Reader.clock at the last use, for the LRU

	mu sync.Mutex
	st *filesystem.Storage
	// closure is what the last merge read here reaches (closure.go);
	// noClosure: the history is too long to keep one.
	closure   *closure
	noClosure bool
}

// get reads commit h: a loose object directly (platform/gitloose: an
// open, reads and a close, where go-git's storage adds an lstat per path
// element, the poller's calls and an fstat), else through go-git's
// storage. Objects another process packed since the pack indexes were
// loaded (a `git push`, a `git gc` that packed loose objects and removed
// them, or removed the packs the indexes name) are found by reloading the
// indexes once when a read fails. Callers hold r.mu.
func (r *repo) get(h plumbing.Hash) (*object.Commit, error) {
	o, err := gitloose.Read(gitloose.Path(r.dir, h), h)
	switch {
	case err == nil && o.Type() != plumbing.CommitObject:
		return nil, plumbing.ErrObjectNotFound // as go-git answers
	case err == nil:
		return object.DecodeCommit(r.st, o)
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	c, err := object.GetCommit(r.st, h)
	if err != nil {
		r.st.Reindex()
		c, err = object.GetCommit(r.st, h)
	}
	return c, err
}

// commitKey names a decoded commit of one repository: a commit read in
// one repository says nothing of another.
type commitKey struct {
	dir string
	h   plumbing.Hash
}

// commits keeps decoded commits between calls, so that a walk over history
// an earlier walk read (in W2 every merge repaints the target's recent
// history) reads no object. A commit is immutable: its hash is its content,
// so a kept commit is never stale. Two generations approximate an LRU in
// O(1): a hit in the old one moves to the current one, and when the current
// one is full it becomes the old one. Safe for concurrent use.
type commits struct {
	mu        sync.Mutex
	cur, prev map[commitKey]*object.Commit
	size      int // cost of cur
	budget    int
	misses    int // gets not answered: what the calls read from repositories
}

func newCommits(budget int) *commits {
	return &commits{cur: map[commitKey]*object.Commit{}, budget: budget}
}

func cost(c *object.Commit) int { return commitCost + len(c.Message) }

func (cs *commits) get(k commitKey) (*object.Commit, bool) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if c, ok := cs.cur[k]; ok {
		return c, true
	}
	c, ok := cs.prev[k]
	if ok {
		delete(cs.prev, k)
		cs.putLocked(k, c)
	} else {
		cs.misses++
	}
	return c, ok
}

func (cs *commits) put(k commitKey, c *object.Commit) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.putLocked(k, c)
}

func (cs *commits) putLocked(k commitKey, c *object.Commit) {
	if _, ok := cs.cur[k]; ok {
		return
	}
	if cs.size+cost(c) > cs.budget && len(cs.cur) > 0 {
		cs.prev, cs.cur, cs.size = cs.cur, map[commitKey]*object.Commit{}, 0
	}
	cs.cur[k] = c
	cs.size += cost(c)
}

// open returns the open repository of git directory dir, opening it if
// need be (and dropping the least recently used one past maxOpen).
func (r *Reader) open(dir string) *repo {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.clock++
	if rp, ok := r.repos[dir]; ok {
		rp.used = r.clock
		return rp
	}
	if len(r.repos) >= maxOpen {
		var old *repo
		for _, rp := range r.repos {
			if old == nil || rp.used < old.used {
				old = rp
			}
		}
		// A call still using it keeps it until it returns; its storage
		// holds no descriptor between reads, so there is nothing to close.
		// Its decoded commits stay until their generation ends: still
		// true if it is opened again.
		delete(r.repos, old.dir)
	}
	rp := &repo{dir: dir, used: r.clock,
		st: filesystem.NewStorage(osfs.New(dir), cache.NewObjectLRU(objectCache))}
	r.repos[dir] = rp
	return rp
}

// commit reads commit h of rp, from the decoded commits when an earlier
// call read it. Callers hold rp.mu.
func (r *Reader) commit(rp *repo, h plumbing.Hash) (*object.Commit, error) {
	k := commitKey{rp.dir, h}
	if c, ok := r.commits.get(k); ok {
		return c, nil
	}
	c, err := rp.get(h)
	if err != nil {
		return nil, fmt.Errorf("commit %s: %w", h, err)
	}
	r.commits.put(k, c)
	return c, nil
}
