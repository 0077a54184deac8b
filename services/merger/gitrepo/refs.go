package gitrepo

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
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// Refs are read and written here, by hand, the way git's "files" ref
// backend does it — not through go-git, whose ref update rewrites the ref in
// place under a flock: not crash-atomic, and blind to the .lock files git
// itself takes (a `git push` racing a merge could be lost).

var (
	// errRefLocked: <ref>.lock exists — another writer is updating the ref.
	errRefLocked = errors.New("ref is locked by another writer")
	// errRefChanged: the ref no longer has the value the merge was built on.
	errRefChanged = errors.New("ref changed concurrently")
)

func loosePath(gitDir, branch string) string {
	return filepath.Join(gitDir, "refs", "heads", filepath.FromSlash(branch))
}

// readRef returns the commit refs/heads/<branch> points at: the loose ref
// file if there is one, else its line in packed-refs (a loose ref overrides
// a packed one). ErrBranchNotFound if neither exists.
func readRef(gitDir, branch string) (plumbing.Hash, error) {
	name := "refs/heads/" + branch
	b, err := os.ReadFile(loosePath(gitDir, branch))
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
	h, ok := parseHash(s)
	if !ok {
		return plumbing.ZeroHash, fmt.Errorf("%s holds %q, not a commit sha", name, truncate(s))
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
		h, ok := parseHash(sha)
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

// updateRef moves refs/heads/<branch> from old to new under git's ref
// lock:
//
//  1. take refs/heads/<branch>.lock (reflock.go: created exclusively,
//     holding this process's record) — if it exists, another writer (git,
//     or another merger) holds the ref: errRefLocked, and the lock is left
//     alone, unless it holds the record of a dead merger (wherever it ran,
//     liveness.go): then it is broken and taken once more;
//  2. under the lock, re-read the ref (loose, else packed) and compare it
//     with old — a mismatch is errRefChanged;
//  3. write "<new>\n" to a temporary file next to the refs (fsynced in
//     sync mode);
//  4. rename it over the loose ref (atomic; a packed-only ref is thereby
//     overridden, as git does), release the lock, and in sync mode fsync
//     the ref's directory.
//
// On every failure after step 1 the lock is released again. A crash leaves
// the ref at its old value (before the rename) or its new one (after),
// never empty or partly written; a lock it leaves behind names the dead
// process, and the next merge breaks it.
//
// r.hooks.refCrash, if not nil, is a test seam called at the points a
// crash matters — crashLockWritten, crashRefMoved and crashRenamed; an
// error from it ends updateRef there as a crash would, without clean-up.
func (r *Repo) updateRef(branch string, old, new plumbing.Hash) (err error) {
	ref := loosePath(r.dir, branch)
	lockPath := ref + ".lock"
	// A packed-only ref in a nested namespace may have no directory yet.
	if err := os.MkdirAll(filepath.Dir(ref), 0o777); err != nil {
		return fmt.Errorf("lock refs/heads/%s: %w", branch, err)
	}
	lock, err := r.acquireLock(lockPath)
	if errors.Is(err, errRefLocked) {
		broken, berr := r.breakDeadLock(lockPath)
		if berr != nil && !errors.Is(berr, errLockRaced) {
			return berr
		}
		if broken {
			lock, err = r.acquireLock(lockPath)
		}
	}
	if errors.Is(err, errRefLocked) {
		return staleLockError(lockPath)
	}
	if err != nil {
		return fmt.Errorf("lock refs/heads/%s: %w", branch, err)
	}
	locked, tmp := true, ""
	defer func() {
		if tmp != "" {
			_ = os.Remove(tmp)
		}
		if locked {
			err = errors.Join(err, lock.release())
		}
	}()

	cur, err := readRef(r.dir, branch)
	if err != nil {
		return err
	}
	if cur != old {
		return fmt.Errorf("refs/heads/%s is %s, expected %s: %w", branch, cur, old, errRefChanged)
	}
	self, _ := me()
	if tmp, err = writeTemp(filepath.Join(r.dir, workDir), "ref", self, []byte(new.String()+"\n")); err != nil {
		return fmt.Errorf("write refs/heads/%s: %w", branch, err)
	}
	if err := r.durable.fsyncFile(tmp); err != nil {
		return err
	}
	if err := crashAt(r.hooks.refCrash, crashLockWritten); err != nil {
		locked, tmp = false, "" // a crashed process cleans nothing up
		return err
	}
	if err := os.Rename(tmp, ref); err != nil {
		return fmt.Errorf("commit refs/heads/%s: %w", branch, err)
	}
	tmp = "" // it is the ref now
	if err := crashAt(r.hooks.refCrash, crashRefMoved); err != nil {
		locked = false
		return err
	}
	locked = false
	if err := lock.release(); err != nil {
		return err
	}
	if err := crashAt(r.hooks.refCrash, crashRenamed); err != nil {
		return err
	}
	return r.durable.fsyncDir(filepath.Dir(ref))
}

// Crash points of updateRef, for tests.
const (
	crashHolderWritten = "holder-written" // a holder file written, the lock not linked yet
	crashLockWritten   = "lock-written"   // locked, new value written (fsynced in sync mode), not renamed
	crashRefMoved      = "ref-moved"      // the ref moved, the lock not released yet
	crashRenamed       = "renamed"        // the ref moved and the lock released, directory not fsynced
)

func crashAt(crash func(string) error, point string) error {
	if crash == nil {
		return nil
	}
	return crash(point)
}

// staleLockError is errRefLocked for an existing lock file, saying what an
// operator can do when it stays: a lock left by a crashed writer that is
// not a merger (git's), or by an older merger without a liveness flock
// from another machine or pid namespace, blocks the branch
// for every writer, git included, until removed.
func staleLockError(lock string) error {
	age := "unknown age"
	if fi, err := os.Stat(lock); err == nil {
		age = time.Since(fi.ModTime()).Round(time.Second).String() + " old"
	}
	if who := describeLock(lock); who != "" {
		age += ", " + who
	}
	return fmt.Errorf("%s exists (%s): %w; if no git process is writing this repository, it was left by a crash: remove the file", lock, age, errRefLocked)
}

// parseHash parses a full 40-hex sha.
func parseHash(s string) (plumbing.Hash, bool) {
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

// truncate keeps file contents out of error messages beyond a readable length.
func truncate(s string) string {
	const max = 80
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}
