package gitreach

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/prsaga/prsaga/platform/gitrefs"
	"github.com/prsaga/prsaga/platform/repopath"
	"github.com/prsaga/prsaga/platform/revwalk"
)

// DefaultLimit bounds the commits one question reads.
const DefaultLimit = 1_000_000

var (
	// ErrBranchNotFound: the repository has no such branch.
	ErrBranchNotFound = errors.New("branch not found")
	// ErrCommitMissing: the repository has no such commit.
	ErrCommitMissing = errors.New("commit not in the repository")
	// ErrUndecided: the walk read Limit commits without an answer.
	ErrUndecided = errors.New("history too long to decide")
)

// Repos answers for the repositories of one repos dir. Safe for
// concurrent use: each question opens the repository afresh.
type Repos struct {
	root repopath.Root
	// Limit bounds the commits one question reads; 0 is DefaultLimit.
	Limit int
}

// New answers for the repositories under reposDir.
func New(reposDir string) *Repos { return &Repos{root: repopath.New(reposDir)} }

// Reaches reports whether refs/heads/<branch> of repo ("owner/name")
// reaches commit (a full sha; the branch's own commit included). Errors:
// repopath.ErrNotFound for a missing repository, ErrBranchNotFound,
// ErrCommitMissing, ErrUndecided, or what reading failed with.
//
// It walks as `git rev-list commit ^branch` does (revwalk): newest
// committer date first, stopping a few commits after only the branch's
// are left — a commit dated much earlier than its own ancestors can make
// it answer false for a commit the branch does reach, as it can git.
func (r *Repos) Reaches(ctx context.Context, repo, branch, commit string) (bool, error) {
	dir, err := r.root.Resolve(repo)
	if err != nil {
		return false, err
	}
	want, ok := parseSHA(commit)
	if !ok {
		return false, fmt.Errorf("%q is not a commit sha", commit)
	}
	tip, err := readBranch(dir, branch)
	if err != nil {
		return false, err
	}
	if tip == want {
		return true, nil
	}
	st := filesystem.NewStorage(osfs.New(dir), cache.NewObjectLRU(4*cache.MiByte))
	defer st.Close()
	limit := r.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	w := &revwalk.Walk{Get: func(h plumbing.Hash) (*object.Commit, error) { return object.GetCommit(st, h) }, Limit: limit}
	c, err := w.Commit(want)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return false, fmt.Errorf("%s: %w", commit, ErrCommitMissing)
	}
	if err != nil {
		return false, fmt.Errorf("read %s: %w", commit, err)
	}
	t, err := w.Commit(tip)
	if err != nil {
		return false, fmt.Errorf("read refs/heads/%s at %s: %w", branch, tip, err)
	}
	only, truncated, err := w.Only(ctx, c, t)
	switch {
	case err != nil:
		return false, err
	case truncated:
		return false, fmt.Errorf("is %s on %s: %w (%d commits read)", commit, branch, ErrUndecided, w.Reads)
	}
	return len(only) == 0, nil
}

// readBranch is refs/heads/<branch>'s commit: the loose ref, else its
// packed-refs line. A symbolic ref is not followed.
func readBranch(dir, branch string) (plumbing.Hash, error) {
	name := "refs/heads/" + branch
	fsys := os.DirFS(dir)
	b, ok, err := gitrefs.Loose(fsys, name)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("read %s: %w", name, err)
	}
	sha := strings.TrimSpace(string(b))
	if !ok {
		if sha, ok, err = gitrefs.Packed(fsys, name); err != nil {
			return plumbing.ZeroHash, err
		}
		if !ok {
			return plumbing.ZeroHash, fmt.Errorf("%s: %w", name, ErrBranchNotFound)
		}
	}
	h, ok := parseSHA(sha)
	if !ok {
		return plumbing.ZeroHash, fmt.Errorf("%s holds %q, not a commit sha", name, sha)
	}
	return h, nil
}

// parseSHA accepts 40 lower-case hex digits.
func parseSHA(s string) (plumbing.Hash, bool) {
	if len(s) != 40 || strings.Trim(s, "0123456789abcdef") != "" {
		return plumbing.ZeroHash, false
	}
	return plumbing.NewHash(s), true
}
