package gitobj

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/prsaga/prsaga/platform/gitloose"
	"github.com/prsaga/prsaga/platform/gitrefs"
)

// Refs are read here, and written by package reflock, by hand, the way
// git's "files" ref backend does it — not through go-git, whose ref update
// rewrites the ref in place under a flock: not crash-atomic, and blind to
// the .lock files git itself takes (a `git push` racing a merge could be
// lost).

// ErrBranchNotFound: the branch does not exist (gitrepo.ErrBranchNotFound).
var ErrBranchNotFound = errors.New("branch not found")

// LoosePath is the loose ref file of refs/heads/<branch>.
func LoosePath(gitDir, branch string) string {
	return filepath.Join(gitDir, "refs", "heads", filepath.FromSlash(branch))
}

// ReadRef returns the commit refs/heads/<branch> points at: the loose ref
// file if there is one, else its line in packed-refs (a loose ref overrides
// a packed one). ErrBranchNotFound if neither exists.
func ReadRef(gitDir, branch string) (plumbing.Hash, error) {
	name := "refs/heads/" + branch
	fsys := gitDirFS{os.DirFS(gitDir), gitDir}
	b, ok, err := gitrefs.Loose(fsys, name)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("read %s: %w", name, err)
	}
	if ok {
		return parseLooseRef(name, b)
	}
	sha, ok, err := gitrefs.Packed(fsys, name)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if !ok {
		return plumbing.ZeroHash, fmt.Errorf("%s: %w", name, ErrBranchNotFound)
	}
	h, ok := ParseHash(sha)
	if !ok {
		return plumbing.ZeroHash, fmt.Errorf("packed-refs: bad line for %s", name)
	}
	return h, nil
}

// gitDirFS is os.DirFS of a git directory whose ReadFile, what
// gitrefs.Loose reads a ref with, is ReadFile's open, read and close.
type gitDirFS struct {
	fs.FS
	dir string
}

func (d gitDirFS) ReadFile(name string) ([]byte, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "readfile", Path: name, Err: fs.ErrInvalid}
	}
	b, err := gitloose.ReadFile(filepath.Join(d.dir, filepath.FromSlash(name)), 64)
	var pe *fs.PathError
	if errors.As(err, &pe) {
		pe.Path = name // as os.DirFS names it
	}
	return b, err
}

func parseLooseRef(name string, b []byte) (plumbing.Hash, error) {
	s := strings.TrimRight(string(b), "\n")
	if strings.HasPrefix(s, "ref:") {
		return plumbing.ZeroHash, fmt.Errorf("%s is a symbolic ref (%s): not supported", name, s)
	}
	h, ok := ParseHash(s)
	if !ok {
		return plumbing.ZeroHash, fmt.Errorf("%s holds %q, not a commit sha", name, Truncate(s))
	}
	return h, nil
}

// ParseHash parses a full 40-hex sha.
func ParseHash(s string) (plumbing.Hash, bool) {
	if len(s) != 40 {
		return plumbing.ZeroHash, false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return plumbing.ZeroHash, false
		}
	}
	return plumbing.NewHash(s), true
}

// Truncate keeps file contents out of error messages beyond a readable length.
func Truncate(s string) string {
	const max = 80
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}
