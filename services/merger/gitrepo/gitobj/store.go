package gitobj

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/prsaga/prsaga/platform/gitloose"
)

// Store is one repository's objects: go-git's storage of its git
// directory, its view of the shared Cache, and the loose objects it
// writes. It is not safe for concurrent use: its owner (gitrepo.Repo)
// serialises the merges of a repository.
type Store struct {
	dir     string // the git directory
	durable Durability
	// named: the file system refused a file without a name (O_TMPFILE):
	// loose objects are written to named temporary files (objects.go).
	named bool

	st *filesystem.Storage
	// session: a merge is under way (Session); kept is then its storage
	// with pack files kept open, made on the first use of go-git's
	// storage in the merge (most merges read only loose objects and never
	// make it).
	session bool
	kept    *filesystem.Storage
	// The repository's view of the shared object cache (cache.go), and
	// go-git's one onto it.
	objects repoCache
	cache   cache.Object
}

// NewStore opens the objects of git directory dir; id tells its values
// apart from other repositories' in the shared cache c, and must be
// unique among the stores using c.
func NewStore(dir string, c *Cache, id uint64, d Durability) *Store {
	view := repoCache{c: c, repo: id}
	return &Store{
		dir: dir, durable: d, objects: view, cache: goGitCache(view),
		st: filesystem.NewStorage(osfs.New(dir), goGitCache(view)),
	}
}

// Dir is the git directory.
func (r *Store) Dir() string { return r.dir }

// Durability is what the store's writes fsync.
func (r *Store) Durability() Durability { return r.durable }

// Storer is go-git's storage, for go-git's own walks (tags, refs, the
// merge base of histories beyond the commit graph). It changes with
// Session: take it anew for each use.
func (r *Store) Storer() *filesystem.Storage {
	if !r.session {
		return r.st
	}
	if r.kept == nil {
		r.kept = filesystem.NewStorageWithOptions(osfs.New(r.dir), r.cache, filesystem.Options{KeepDescriptors: true})
	}
	return r.kept
}

// Close releases the storage's files.
func (r *Store) Close() error {
	if r.kept != nil {
		_ = r.kept.Close()
		r.kept = nil
	}
	return r.st.Close()
}

// Config is the repository's config file, read anew each call; an empty
// config when there is none, as go-git answers.
func (r *Store) Config() (*config.Config, error) {
	b, err := gitloose.ReadFile(filepath.Join(r.dir, "config"), 4096)
	if errors.Is(err, fs.ErrNotExist) {
		return config.NewConfig(), nil
	}
	if err != nil {
		return nil, err
	}
	c := config.NewConfig()
	if err := c.Unmarshal(b); err != nil {
		return nil, err
	}
	return c, nil
}

// Refresh makes go-git see packs written by other processes since the last
// call (`git push` of many objects, `git gc`): go-git loads the pack index
// list once and would otherwise never find their objects. Loose objects are
// always looked up on disk, refs are read by ReadRef.
func (r *Store) Refresh() {
	r.st.Reindex()
	if r.kept != nil {
		r.kept.Reindex()
	}
}

// Session switches the store, for one merge, to a storage that keeps its
// pack files open — go-git otherwise opens and closes a pack for every
// object it reads, which made a merge-base walk over 5,000 commits spend
// most of its time in open(2) — and returns the function that closes them
// and switches back. Holding no descriptors between merges keeps a merger
// serving many repositories within its file limit. Both storages share the
// object cache. The storage is made when the merge first reaches go-git's
// storage (Storer, an object that is not loose): making it walks the
// repository's path with an lstat per element, which a merge of loose
// objects only (every merge of a busy repository's new commits) would pay
// for nothing.
func (r *Store) Session() (end func()) {
	r.session = true
	return func() {
		if r.kept != nil {
			_ = r.kept.Close() // read-only descriptors: nothing to lose on error
			r.kept = nil
		}
		r.session = false
	}
}

// NewEncodedObject is an empty object to encode into, in memory.
func (r *Store) NewEncodedObject() plumbing.EncodedObject { return &plumbing.MemoryObject{} }

// Commit loads a commit object, from the cache of parsed commits if it is
// there; ErrObjectMissing wrapped if it is not in the repository. The
// commit is not bound to a storage: go-git methods that load other
// objects (Parents, Tree, MergeBase) must not be called on it.
func (r *Store) Commit(h plumbing.Hash) (*object.Commit, error) {
	if c, ok := r.objects.commit(h); ok {
		return c, nil
	}
	c, err := r.ReadCommit(h)
	if err != nil {
		return nil, err
	}
	r.objects.putCommit(h, c)
	return c, nil
}

// CachedCommit is a commit from the cache of parsed commits, never read:
// walks over whole histories read the rest with ReadCommit, so as not to
// flush the cache, but take what is there (the commits a merge just read).
func (r *Store) CachedCommit(h plumbing.Hash) (*object.Commit, bool) { return r.objects.commit(h) }

// KeepCommit puts a commit just made into the cache of parsed commits.
func (r *Store) KeepCommit(c *object.Commit) { r.objects.putCommit(c.Hash, c) }

// ReadCommit reads and parses a commit object, bypassing the cache.
func (r *Store) ReadCommit(h plumbing.Hash) (*object.Commit, error) {
	o, err := r.Object(plumbing.AnyObject, h)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return nil, fmt.Errorf("commit %s: %w", h, ErrObjectMissing)
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

// ErrObjectMissing marks a commit that is not in the repository at all.
var ErrObjectMissing = errors.New("object not in repository")

// CachedTree returns a parsed tree kept by CacheTree; it is shared:
// callers must not modify it.
func (r *Store) CachedTree(h plumbing.Hash) (any, bool) { return r.objects.tree(h) }

// CacheTree keeps a parsed tree of n entries whose names hold nameBytes
// bytes, for the estimate of its size.
func (r *Store) CacheTree(h plumbing.Hash, t any, n, nameBytes int) {
	r.objects.putTree(h, t, n, nameBytes)
}
