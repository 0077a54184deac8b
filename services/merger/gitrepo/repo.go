package gitrepo

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/prsaga/prsaga/contracts"
)

// Repo is one bare repository. Its methods are safe for concurrent use:
// merges take turns on the repository's mutex, Head only reads ref files.
type Repo struct {
	name    string // "owner/name"
	dir     string // the git directory
	retry   retryPolicy
	hooks   hooks
	durable durability

	mu sync.Mutex // guards st and the caches: go-git is not safe for concurrent use
	st *filesystem.Storage
	// The repository's view of the Repos' shared object cache (cache.go),
	// and go-git's one onto it.
	objects repoCache
	cache   cache.Object
	graph   *commitGraph // kept across merges (graph.go)
	lastUse uint64       // Repos.clock at the last Open; guarded by the Repos' mutex
	swept   bool         // dead mergers' files were removed from the work directory (reflock.go)
	// overlay holds objects made by a merge and read back before (or
	// instead of) being written: a criss-cross merge's virtual base, and
	// everything a check merge makes (check.go). Guarded by mu.
	overlay map[plumbing.Hash]plumbing.EncodedObject
}

// retryPolicy bounds how often, and how patiently, a merge retries when the
// target ref is locked by another writer or moved under it.
type retryPolicy struct {
	attempts int           // ref update attempts in total
	backoff  time.Duration // first wait; doubles up to maxWait
	maxWait  time.Duration
}

// defaultRetry waits up to about 3s in total for a busy target branch —
// longer than git's own 100ms ref lock timeout, since a merger has nobody
// waiting interactively and a retry of the whole step costs more.
var defaultRetry = retryPolicy{attempts: 40, backoff: 2 * time.Millisecond, maxWait: 100 * time.Millisecond}

func (p retryPolicy) wait(attempt int) time.Duration {
	d := p.backoff << min(attempt, 16)
	return min(d, p.maxWait)
}

// hooks let in-package tests act at exact points of a merge instead of
// sleeping. Nil hooks are skipped; production code never sets them.
type hooks struct {
	beforeRefUpdate func() // the merge is planned and written; the ref lock is not taken yet
	lockBusy        func() // the target ref's lock file exists; the merge will back off
	// refCrash is updateRef's crash seam: an error it returns at a point
	// ends the ref update there as a crash would.
	refCrash func(point string) error
}

func call(f func()) {
	if f != nil {
		f()
	}
}

// Name returns the repository id "owner/name".
func (r *Repo) Name() string { return r.name }

// Head returns the commit sha refs/heads/<branch> points at, reading the
// loose ref or else packed-refs from disk (never a cached value).
// ErrBranchNotFound if the branch does not exist, ErrInvalid for a malformed
// branch name.
func (r *Repo) Head(branch string) (string, error) {
	if err := contracts.ValidateBranch("branch", branch); err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	h, err := readRef(r.dir, branch)
	if err != nil {
		return "", err
	}
	return h.String(), nil
}

// refresh makes go-git see packs written by other processes since the last
// call (`git push` of many objects, `git gc`): go-git loads the pack index
// list once and would otherwise never find their objects. Loose objects are
// always looked up on disk, refs are read by readRef. Callers hold r.mu.
func (r *Repo) refresh() { r.st.Reindex() }

// session switches r.st, for one merge, to a storage that keeps its pack
// files open — go-git otherwise opens and closes a pack for every object it
// reads, which made a merge-base walk over 5,000 commits spend most of its
// time in open(2) — and returns the function that closes them and switches
// back. Holding no descriptors between merges keeps a merger serving many
// repositories within its file limit. Both storages share the object
// cache. Callers hold r.mu.
func (r *Repo) session() (end func()) {
	st := filesystem.NewStorageWithOptions(osfs.New(r.dir), r.cache, filesystem.Options{KeepDescriptors: true})
	prev := r.st
	r.st = st
	return func() {
		_ = st.Close() // read-only descriptors: nothing to lose on error
		r.st = prev
	}
}

// commit loads a commit object, from the cache of parsed commits if it is
// there; errObjectMissing wrapped if it is not in the repository. The
// commit is not bound to a storage: go-git methods that load other
// objects (Parents, Tree, MergeBase) must not be called on it.
func (r *Repo) commit(h plumbing.Hash) (*object.Commit, error) {
	if c, ok := r.objects.commit(h); ok {
		return c, nil
	}
	c, err := r.readCommit(h)
	if err != nil {
		return nil, err
	}
	r.objects.putCommit(h, c)
	return c, nil
}

// readCommit reads and parses a commit object, bypassing the cache.
func (r *Repo) readCommit(h plumbing.Hash) (*object.Commit, error) {
	o, err := r.st.EncodedObject(plumbing.AnyObject, h)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return nil, fmt.Errorf("commit %s: %w", h, errObjectMissing)
	}
	if err != nil {
		return nil, fmt.Errorf("commit %s: %w", h, err)
	}
	c := &object.Commit{}
	if err := c.Decode(o); err != nil {
		return nil, fmt.Errorf("commit %s: %w", h, err)
	}
	return c, nil
}

// errObjectMissing marks a commit that is not in the repository at all.
var errObjectMissing = errors.New("object not in repository")
