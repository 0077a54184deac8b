package gitrefs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/repopath"
	"github.com/prsaga/prsaga/services/validator"
)

// Heads reads refs/heads/<branch> of the bare repositories under a repos
// dir. Safe for concurrent use; it holds no state but the directory's path.
type Heads struct {
	repos repopath.Root
}

var _ validator.Heads = (*Heads)(nil)

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
	if err := repopath.Check(repo); err != nil {
		return "", fmt.Errorf("read head: %w", err)
	}
	if err := contracts.ValidateBranch("branch", branch); err != nil {
		return "", fmt.Errorf("read head: %w", err)
	}
	dir, err := h.repos.Resolve(repo)
	if errors.Is(err, repopath.ErrNotFound) {
		return "", fmt.Errorf("%w: %w", validator.ErrNotFound, err)
	}
	if err != nil {
		return "", err
	}
	// The refs are read through an os.Root of the repository: a ref file
	// that is a link cannot lead out of it either.
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", fmt.Errorf("repository %s: %w", repo, err)
	}
	defer root.Close()
	gitDir := "."
	if _, err := root.Stat(path.Join(gitDir, "reftable")); err == nil {
		return "", fmt.Errorf("repository %s uses the reftable ref format, which is not supported", repo)
	}
	sha, err := resolve(root, gitDir, "refs/heads/"+branch, 0)
	if errors.Is(err, errNoRef) {
		return "", fmt.Errorf("branch %s of repository %s: %w", branch, repo, validator.ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("branch %s of repository %s: %w", branch, repo, err)
	}
	return sha, nil
}

var errNoRef = errors.New("no such ref")

// resolve reads ref the way git's files backend does: the loose file
// <gitDir>/<ref> first, then packed-refs. A loose ref is replaced by rename
// and pack-refs writes packed-refs before it deletes loose files, so reading
// loose-then-packed always sees a value the ref really had. Symbolic refs
// ("ref: refs/...") are followed.
func resolve(root *os.Root, gitDir, ref string, depth int) (string, error) {
	if depth > maxSymrefDepth {
		return "", fmt.Errorf("ref %s: symbolic refs nested too deeply", ref)
	}
	b, err := root.ReadFile(path.Join(gitDir, ref))
	switch {
	case err == nil:
		v := strings.TrimSpace(string(b))
		if target, ok := strings.CutPrefix(v, "ref:"); ok {
			target = strings.TrimSpace(target)
			if !strings.HasPrefix(target, "refs/") || strings.Contains(target, "..") {
				return "", fmt.Errorf("ref %s: symbolic ref to %q outside refs/", ref, clip(target))
			}
			return resolve(root, gitDir, target, depth+1)
		}
		if err := contracts.ValidateSHA("ref "+ref, v); err != nil {
			return "", err
		}
		return v, nil
	case errors.Is(err, fs.ErrNotExist), isDir(err), isNotDir(err):
		// A directory is a ref prefix ("a" when "a/b" exists), not a ref.
	default:
		return "", err
	}
	return packed(root, gitDir, ref)
}

// packed looks ref up in packed-refs ("<sha> <ref>" lines; "#" header and
// "^<sha>" peeled lines skipped).
func packed(root *os.Root, gitDir, ref string) (string, error) {
	f, err := root.Open(path.Join(gitDir, "packed-refs"))
	if errors.Is(err, fs.ErrNotExist) {
		return "", errNoRef
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<10)
	want := []byte(" " + ref)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] == '#' || line[0] == '^' {
			continue
		}
		if bytes.HasSuffix(line, want) && len(line) == 40+len(want) {
			sha := string(line[:40])
			if err := contracts.ValidateSHA("packed ref "+ref, sha); err != nil {
				return "", err
			}
			return sha, nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("read packed-refs: %w", err)
	}
	return "", errNoRef
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
