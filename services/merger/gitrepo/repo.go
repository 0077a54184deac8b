package gitrepo

import (
	"fmt"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/services/merger/gitrepo/engine"
	"github.com/prsaga/prsaga/services/merger/gitrepo/gitobj"
	"github.com/prsaga/prsaga/services/merger/gitrepo/history"
	"github.com/prsaga/prsaga/services/merger/gitrepo/reflock"
)

// Repo is one bare repository. Its methods are safe for concurrent use:
// merges take turns on the repository's mutex, Head only reads ref files.
//
// A Repo composes the merger's git packages: its objects (gitobj), its
// history (history: merge bases, rev-list), the merge engine (engine:
// trees, files, lines) and its ref locks (reflock).
type Repo struct {
	name  string // "owner/name"
	dir   string // the git directory
	retry retryPolicy
	hooks hooks

	// mu guards the three below: go-git, the caches and the commit graph
	// are not safe for concurrent use.
	mu      sync.Mutex
	store   *gitobj.Store    // objects, with the Repos' shared cache
	history *history.History // the commit graph, kept across merges
	locks   *reflock.Locker  // the ref locks, taken and broken
	lastUse uint64           // Repos.clock at the last Open; guarded by the Repos' mutex
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
	beforeRefUpdate func() // the merge is planned, written and journalled; the ref lock is not taken yet
	lockBusy        func() // the target ref's lock file exists; the merge will back off
	// refCrash is the ref update's crash seam (reflock.Locker.Crash): an
	// error it returns at a point ends the ref update there as a crash
	// would.
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
	h, err := gitobj.ReadRef(r.dir, branch)
	if err != nil {
		return "", err
	}
	return h.String(), nil
}

// engine is the merge engine over the repository, for one merge: the
// objects of a virtual base live as long as it. Callers hold r.mu.
func (r *Repo) engine() *engine.Engine { return engine.New(r.store, r.history) }

// updateRef moves refs/heads/<branch> from old to new under git's ref lock
// (reflock.Locker.Update). Callers hold r.mu.
func (r *Repo) updateRef(branch string, old, new plumbing.Hash) error {
	r.locks.Crash = r.hooks.refCrash
	return r.locks.Update(branch, old, new)
}
