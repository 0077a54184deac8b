package gitrefs

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/gitrefs"
	"github.com/prsaga/prsaga/platform/repopath"
	"github.com/prsaga/prsaga/services/validator"
)

// Heads reads refs/heads/<branch> of the bare repositories under a repos
// dir. Safe for concurrent use; it holds no state but the directory's path.
type Heads struct {
	repos repopath.Root
}

var _ validator.BranchHeads = (*Heads)(nil)

// New returns a reader of the repositories under reposDir. The directory
// need not exist yet: until it does, every repository is missing.
func New(reposDir string) *Heads { return &Heads{repos: repopath.New(reposDir)} }

// maxSymrefDepth bounds chains of symbolic refs (git uses 5 as well).
const maxSymrefDepth = 5

// Head returns the sha refs/heads/<branch> points at in repo, read now. A
// missing repository or branch gives an error matching
// validator.ErrNotFound. repo and branch are validated again here, since
// they become paths.
func (h *Heads) Head(repo, branch string) (string, error) {
	shas, err := h.HeadsOf(repo, branch)
	if err != nil {
		return "", err
	}
	return shas[0], nil
}

// HeadsOf returns what Head would for each branch in turn, stopping at the
// first error, with the repository looked up and opened once.
func (h *Heads) HeadsOf(repo string, branches ...string) ([]string, error) {
	if err := repopath.Check(repo); err != nil {
		return nil, fmt.Errorf("read head: %w", err)
	}
	var root *gitrefs.Dir
	defer func() {
		if root != nil {
			root.Close()
		}
	}()
	shas := make([]string, 0, len(branches))
	for _, branch := range branches {
		if err := contracts.ValidateBranch("branch", branch); err != nil {
			return nil, fmt.Errorf("read head: %w", err)
		}
		if root == nil {
			var err error
			if root, err = h.open(repo); err != nil {
				return nil, err
			}
		}
		sha, err := resolve(root, "refs/heads/"+branch, 0)
		if errors.Is(err, errNoRef) {
			return nil, fmt.Errorf("branch %s of repository %s: %w", branch, repo, validator.ErrNotFound)
		}
		if err != nil {
			return nil, fmt.Errorf("branch %s of repository %s: %w", branch, repo, err)
		}
		shas = append(shas, sha)
	}
	return shas, nil
}

// open looks repo up and opens it as a gitrefs.Dir: the refs are read
// through it, so a ref file that is a link cannot lead out of the
// repository either.
func (h *Heads) open(repo string) (*gitrefs.Dir, error) {
	// Verify is Resolve's check in a third of its system calls; the root
	// is opened at the repository's path under the repos dir, which it
	// checked.
	err := h.repos.Verify(repo)
	if errors.Is(err, repopath.ErrNotFound) {
		return nil, fmt.Errorf("%w: %w", validator.ErrNotFound, err)
	}
	if err != nil {
		return nil, err
	}
	dir, err := h.repos.Path(repo)
	if err != nil {
		return nil, err
	}
	root, err := gitrefs.OpenDir(dir)
	if err != nil {
		return nil, fmt.Errorf("repository %s: %w", repo, err)
	}
	if _, err := root.Stat("reftable"); err == nil {
		root.Close()
		return nil, fmt.Errorf("repository %s uses the reftable ref format, which is not supported", repo)
	}
	return root, nil
}

var errNoRef = errors.New("no such ref")

// resolve reads ref the way git's files backend does (platform/gitrefs:
// the loose file first, then packed-refs), following symbolic refs ("ref:
// refs/...").
func resolve(fsys fs.FS, ref string, depth int) (string, error) {
	if depth > maxSymrefDepth {
		return "", fmt.Errorf("ref %s: symbolic refs nested too deeply", ref)
	}
	b, ok, err := gitrefs.Loose(fsys, ref)
	if err != nil {
		return "", err
	}
	if ok {
		v := strings.TrimSpace(string(b))
		if target, ok := strings.CutPrefix(v, "ref:"); ok {
			target = strings.TrimSpace(target)
			if !strings.HasPrefix(target, "refs/") || strings.Contains(target, "..") {
				return "", fmt.Errorf("ref %s: symbolic ref to %q outside refs/", ref, clip(target))
			}
			return resolve(fsys, target, depth+1)
		}
		if err := contracts.ValidateSHA("ref "+ref, v); err != nil {
			return "", err
		}
		return v, nil
	}
	// A line whose sha field is not 40 characters is no "<sha> <ref>" line:
	// it is passed over, as if the ref were missing.
	sha, ok, err := gitrefs.Packed(fsys, ref)
	if err != nil {
		return "", err
	}
	if !ok || len(sha) != 40 {
		return "", errNoRef
	}
	if err := contracts.ValidateSHA("packed ref "+ref, sha); err != nil {
		return "", err
	}
	return sha, nil
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
