package repopath

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/prsaga/prsaga/contracts"
)

var (
	// ErrNotFound: no bare repository at the id's path (or no repos dir).
	ErrNotFound = errors.New("no such repository")
	// ErrOutside: the id's path exists but, once symbolic links are
	// followed, lies outside the repos dir. Kept apart from ErrNotFound:
	// it is a misconfiguration (or an attack) worth seeing, not a
	// missing repository.
	ErrOutside = errors.New("resolves outside the repos dir")
)

// Root is a repos dir. The zero value is not usable; use New. Safe for
// concurrent use: it holds only the directory's absolute path.
type Root struct {
	dir string
}

// New returns the repos dir at dir, made absolute (when the working
// directory can be known: else it stays relative, and using it fails as
// using the relative path would). The directory need not exist: until it
// does, every repository is missing.
func New(dir string) Root {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Root{dir: filepath.Clean(dir)}
	}
	return Root{dir: abs}
}

// Dir returns the repos dir's absolute path.
func (r Root) Dir() string { return r.dir }

// Check validates a repository id. The rules are the contracts'
// (contracts.ValidateRepo); they are checked again here, at the file-system
// boundary, independently of them: exactly two plain path elements of
// [A-Za-z0-9._-], neither "." nor containing "..". Errors match
// contracts.ErrInvalid; a contracts error is returned unchanged.
func Check(repo string) error {
	if err := contracts.ValidateRepo(repo); err != nil {
		return err
	}
	owner, name, ok := strings.Cut(repo, "/")
	if !ok || !plainElem(owner) || !plainElem(name) {
		return &contracts.FieldError{Field: "repo", Problem: fmt.Sprintf("%q is not owner/name", repo)}
	}
	return nil
}

// Path returns where repository repo lives under the root, without looking
// at the file system (to create a repository there). The result is always
// exactly two levels below the root.
func (r Root) Path(repo string) (string, error) {
	if err := Check(repo); err != nil {
		return "", err
	}
	owner, name, _ := strings.Cut(repo, "/")
	dir := filepath.Join(r.dir, owner, name+".git")
	if filepath.Dir(filepath.Dir(dir)) != r.dir {
		return "", &contracts.FieldError{Field: "repo", Problem: fmt.Sprintf("%q escapes the repos dir", repo)}
	}
	return dir, nil
}

// Resolve returns the real directory (symbolic links followed) of the
// existing bare repository repo. Errors: contracts.ErrInvalid for a
// malformed id, ErrNotFound when the repos dir or the repository is missing
// or is not a bare repository, ErrOutside when a symbolic link leads out of
// the repos dir (the repos dir itself may be a link).
//
// The answer holds when it is given: whoever can replace directories under
// the repos dir between this call and the use of its result can still
// redirect that use. The repos dir is trusted to that extent; ids are not.
func (r Root) Resolve(repo string) (string, error) {
	dir, err := r.Path(repo)
	if err != nil {
		return "", err
	}
	root, err := filepath.EvalSymlinks(r.dir)
	if err != nil {
		if missing(err) {
			return "", fmt.Errorf("repository %s: %w (repos dir: %v)", repo, ErrNotFound, err)
		}
		return "", fmt.Errorf("repos dir: %w", err)
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		if missing(err) {
			return "", fmt.Errorf("repository %s: %w", repo, ErrNotFound)
		}
		return "", fmt.Errorf("repository %s: %w", repo, err)
	}
	if !within(root, real) {
		return "", fmt.Errorf("repository %s %w", repo, ErrOutside)
	}
	if !IsBare(real) {
		return "", fmt.Errorf("repository %s: %w (no bare repository there)", repo, ErrNotFound)
	}
	return real, nil
}

// Verify answers as Resolve does — nil when Resolve returns a path, else
// Resolve's error — for a caller that keeps using Path's path and needs
// only the check, at a third of its system calls in the usual case.
//
// Resolve follows every element of the repos dir's path and of the
// repository's, one lstat each, twice over the repos dir's. Verify first
// lstats only the id's two elements, <root>/<owner> and then
// <root>/<owner>/<name>.git. When both are directories (not links), the
// repository's real path is the repos dir's real path joined with
// "<owner>/<name>.git": the walk to the repository is the walk to the
// repos dir, which existed (the lstats went through it), followed by two
// steps down to directories named by plain elements, neither "." nor
// "..". That path lies strictly inside the repos dir's real path, which
// is Resolve's test, and the bare-repository test of that path is the one
// of Path's path (the same directory). So what Verify accepts lies inside
// the repos dir and is bare, as what Resolve accepts; in every other case
// — a link, a missing element, an error — Verify asks Resolve itself.
// Like Resolve's, its answer holds when it is given: its lstats, like
// Resolve's, follow one another. The bare-repository test of a directory
// unchanged since an earlier call is that call's (bare.go): the lstats are
// made every time.
func (r Root) Verify(repo string) error {
	dir, err := r.Path(repo)
	if err != nil {
		return err
	}
	asked := time.Now()
	if plainDir(filepath.Dir(dir)) {
		if s, ok := plainDirStamp(dir); ok && isBareAt(dir, s, asked) {
			return nil
		}
	}
	_, err = r.Resolve(repo)
	return err
}

// plainDir reports whether path's last element is a directory, not a
// symbolic link to one.
func plainDir(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.IsDir()
}

// missing: the path or one of its parents does not exist, or a parent is
// a file ("acme" a file, so no "acme/x.git").
func missing(err error) bool {
	return errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// within reports whether path lies strictly below root (both real, clean).
func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// plainElem is one path element of [A-Za-z0-9._-], not "." and without "..".
func plainElem(s string) bool {
	if s == "" || s == "." || strings.Contains(s, "..") {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// IsBare reports whether dir is a git directory the way git decides it:
// HEAD a file, objects/ and refs/ directories. A non-bare checkout at the
// path is refused: its git directory would be dir/.git.
func IsBare(dir string) bool {
	head, err := os.Stat(filepath.Join(dir, "HEAD"))
	if err != nil || head.IsDir() {
		return false
	}
	for _, sub := range []string{"objects", "refs"} {
		fi, err := os.Stat(filepath.Join(dir, sub))
		if err != nil || !fi.IsDir() {
			return false
		}
	}
	return true
}
