package gitobj

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing"
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
	b, err := os.ReadFile(LoosePath(gitDir, branch))
	switch {
	case err == nil:
		return parseLooseRef(name, b)
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.EISDIR), errors.Is(err, syscall.ENOTDIR):
		// No loose ref (refs/heads/a is a directory when only a/b exists,
		// or a path component is a file): fall back to packed-refs.
	default:
		return plumbing.ZeroHash, fmt.Errorf("read %s: %w", name, err)
	}
	h, ok, err := readPackedRef(gitDir, name)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if !ok {
		return plumbing.ZeroHash, fmt.Errorf("%s: %w", name, ErrBranchNotFound)
	}
	return h, nil
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

// readPackedRef looks a ref up in packed-refs: "<sha> <name>" lines, "#"
// header lines and "^<sha>" peeled-tag lines. git replaces packed-refs
// atomically (packed-refs.lock + rename), so a read sees a whole file.
func readPackedRef(gitDir, name string) (plumbing.Hash, bool, error) {
	b, err := os.ReadFile(filepath.Join(gitDir, "packed-refs"))
	if errors.Is(err, fs.ErrNotExist) {
		return plumbing.ZeroHash, false, nil
	}
	if err != nil {
		return plumbing.ZeroHash, false, fmt.Errorf("read packed-refs: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' || line[0] == '^' {
			continue
		}
		sha, ref, ok := strings.Cut(line, " ")
		if !ok || ref != name {
			continue
		}
		h, ok := ParseHash(sha)
		if !ok {
			return plumbing.ZeroHash, false, fmt.Errorf("packed-refs: bad line for %s", name)
		}
		return h, true, nil
	}
	if err := sc.Err(); err != nil {
		return plumbing.ZeroHash, false, fmt.Errorf("read packed-refs: %w", err)
	}
	return plumbing.ZeroHash, false, nil
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
