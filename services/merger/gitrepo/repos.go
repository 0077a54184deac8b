package gitrepo

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/config"

	"github.com/prsaga/prsaga/platform/fault"
	"github.com/prsaga/prsaga/platform/mountinfo"
	"github.com/prsaga/prsaga/platform/repopath"
	"github.com/prsaga/prsaga/services/merger/gitrepo/gitobj"
	"github.com/prsaga/prsaga/services/merger/gitrepo/history"
	"github.com/prsaga/prsaga/services/merger/gitrepo/reflock"
)

// Repos gives access to the bare repositories under one root directory,
// repository "owner/name" living at <root>/<owner>/<name>.git. It keeps every
// repository it opened (for the life of the Repos); the objects and commit
// graphs kept across merges are bounded for all of them together
// (gitobj/cache.go, graphbudget.go).
//
// Repos is safe for concurrent use. Each repository has one mutex that its
// merges hold (go-git is not safe for concurrent use); different
// repositories are worked on in parallel. Other processes (another merger,
// `git push`) may write the same repositories at the same time: refs are
// moved with git's lockfile protocol and pack indexes are re-read per call.
type Repos struct {
	root    string
	paths   repopath.Root // root, where ids become paths
	durable gitobj.Durability

	cache *gitobj.Cache // shared by all its repositories (gitobj/cache.go)

	mu     sync.Mutex
	repos  map[string]*Repo
	nextID uint64 // the cache's key of the next repository opened
	// The commit graphs' bound (graphbudget.go): a use counter, and the
	// commits all graphs may hold.
	clock      uint64
	graphLimit int
}

// NewRepos returns the repositories under root, which must be an existing
// directory, with the default Options (durability "process").
func NewRepos(root string) (*Repos, error) {
	return NewReposWithOptions(root, Options{})
}

// NewReposWithOptions returns the repositories under root, which must be
// an existing directory. A root on an NFS mount that keeps locks on this
// node (local_lock=flock, =all or =posix, or nolock) is refused: the ref
// locks' liveness is their flock, which mergers on other nodes would not
// see, so they could break a live merger's lock (docs/operating.md,
// "Replicas").
func NewReposWithOptions(root string, opts Options) (*Repos, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("repos dir %q: %w", root, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("repos dir: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("repos dir %q is not a directory", abs)
	}
	if err := mountinfo.CheckSharedLocks(abs); err != nil {
		return nil, fmt.Errorf("repos dir: %w: mergers on other nodes would not see a live merger's ref lock, and could break it; mount it with local_lock=none and without nolock (docs/operating.md, \"Replicas\")", err)
	}
	fault.Register(FaultRefLocked, FaultRefChecked)
	budget := opts.CacheBytes
	if budget <= 0 {
		budget = DefaultCacheBytes
	}
	return &Repos{
		root: abs, paths: repopath.New(abs), repos: map[string]*Repo{}, cache: gitobj.NewCache(budget), graphLimit: maxGraphNodesTotal,
		durable: gitobj.Durability{Sync: opts.Sync, OnFsync: opts.OnFsync},
	}, nil
}

// Open returns the bare repository "owner/name"; ErrInvalid for a malformed
// id, ErrRepoNotFound when there is no bare repository at its path.
func (rs *Repos) Open(repo string) (*Repo, error) {
	dir, err := rs.path(repo)
	if err != nil {
		return nil, err
	}
	// Symbolic links are followed, but not out of the repos dir (the
	// repository keeps its path under the root, as it is named). Checked
	// on every open, not only the first: a repository replaced since by a
	// link out of the repos dir is refused, as the validator and the
	// indexer refuse it. Verify is Resolve's check without the real path,
	// which the merger does not use.
	if err := rs.paths.Verify(repo); err != nil {
		if errors.Is(err, repopath.ErrNotFound) {
			return nil, fmt.Errorf("open %s: %w", repo, ErrRepoNotFound)
		}
		return nil, fmt.Errorf("open %s: %w", repo, err)
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if r, ok := rs.repos[repo]; ok {
		rs.noteUse(r)
		return r, nil
	}
	r := rs.newRepo(repo, dir)
	rs.repos[repo] = r
	rs.noteUse(r)
	return r, nil
}

// Init creates the bare repository "owner/name" with HEAD pointing at
// refs/heads/main and no commits, for tests and demos. It fails (wrapping
// os.ErrExist) if something already exists at the repository's path.
func (rs *Repos) Init(repo string) (*Repo, error) {
	dir, err := rs.path(repo)
	if err != nil {
		return nil, err
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if _, err := os.Lstat(dir); err == nil {
		return nil, fmt.Errorf("init %s: %w", repo, os.ErrExist)
	}
	if err := initBare(dir); err != nil {
		return nil, fmt.Errorf("init %s: %w", repo, err)
	}
	r := rs.newRepo(repo, dir)
	rs.repos[repo] = r
	return r, nil
}

func initBare(dir string) error {
	r, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{
		Bare:        true,
		InitOptions: git.InitOptions{DefaultBranch: plumbing.Main},
	})
	if err != nil {
		return err
	}
	// Without core.repositoryformatversion, git run with an explicit
	// --git-dir ignores core.bare and takes the current directory for a
	// work tree; write it as `git init --bare` does.
	cfg, err := r.Config()
	if err != nil {
		return err
	}
	cfg.Core.RepositoryFormatVersion = config.Version_0
	return r.SetConfig(cfg)
}

// newRepo: callers hold rs.mu.
func (rs *Repos) newRepo(repo, dir string) *Repo {
	rs.nextID++
	st := gitobj.NewStore(dir, rs.cache, rs.nextID, rs.durable)
	return &Repo{
		name: repo, dir: dir, retry: defaultRetry,
		store: st, history: history.New(st), locks: reflock.New(dir, rs.durable),
	}
}

// path validates a repository id and maps it to its directory under the
// root, without looking at the file system (platform/repopath).
func (rs *Repos) path(repo string) (string, error) {
	dir, err := rs.paths.Path(repo)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return dir, nil
}
