package gitrepo

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Ref locks. A merger takes refs/heads/<b>.lock exactly as git does —
// created exclusively, never taken over from a live writer — but its lock
// file holds a holder record (lockholder.go) instead of the new ref value,
// and the new value reaches the ref through a temporary file of its own,
// renamed over the ref while the lock is held. git and other writers only
// care that the lock exists; nobody but the holder reads it.
//
// A lock whose record names a dead process of this machine and pid space
// is broken (breakDeadLock); any other lock — git's, an older merger's
// without a record, a live process's, another machine's — is respected.

// workDir is where a merger keeps its temporary files inside a git
// directory: git ignores unknown directories there, and it is on the same
// file system as refs/, so renames from it are atomic.
const workDir = "prsaga"

// lockFile is a ref lock this process holds.
type lockFile struct {
	path   string
	record []byte
}

// acquireLock creates lock holding this process's record, atomically with
// its content: the lock is a hard link to the process's holder file (one
// per repository, written once), and link(2) fails if the name exists — so
// no crash can leave a lock without its record, and taking a lock creates
// no file. Where hard links are not supported it falls back to O_EXCL and
// a write. errRefLocked if the lock exists. Callers hold r.mu.
func (r *Repo) acquireLock(lock string) (*lockFile, error) {
	for range 2 {
		h, err := r.holderFile()
		if err != nil {
			return nil, fmt.Errorf("lock %s: %w", lock, err)
		}
		err = os.Link(h.path, lock)
		switch {
		case err == nil:
			return &lockFile{path: lock, record: h.record}, nil
		case errors.Is(err, fs.ErrExist):
			return nil, errRefLocked
		case errors.Is(err, fs.ErrNotExist):
			r.holder = nil // someone removed the holder file: write it again
			continue
		case errors.Is(err, syscall.EPERM), errors.Is(err, syscall.ENOTSUP), errors.Is(err, syscall.EOPNOTSUPP), errors.Is(err, syscall.EMLINK):
			return createLock(lock, h.record)
		}
		return nil, fmt.Errorf("lock %s: %w", lock, err)
	}
	return nil, fmt.Errorf("lock %s: holder file keeps vanishing", lock)
}

// holderFile is this process's record in a repository's work directory;
// every lock it takes there is a hard link to it.
type holderFile struct {
	path   string
	record []byte
}

func (r *Repo) holderFile() (*holderFile, error) {
	if r.holder != nil {
		return r.holder, nil
	}
	self, _ := me()
	rec := self.record()
	dir := filepath.Join(r.dir, workDir)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, err
	}
	path, err := writeTemp(dir, "holder", self, rec)
	if err != nil {
		return nil, err
	}
	r.holder = &holderFile{path: path, record: rec}
	removeDeadHolders(dir)
	return r.holder, nil
}

// removeDeadHolders removes the holder files (and other temporary files)
// of dead processes from a work directory: every merger process leaves
// its holder file behind when it exits. Locks of theirs still present keep
// their record: a lock is another link to the same file.
func removeDeadHolders(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "holder-") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		if h, ok := parseRecord(b); ok && judge(h) == holderDead {
			removeLitter(dir, h)
		}
	}
}

// createLock is the fallback of acquireLock without hard links: a crash
// between the create and the write leaves an empty lock, which is never
// broken (an operator removes it, as with git's).
func createLock(lock string, rec []byte) (*lockFile, error) {
	f, err := os.OpenFile(lock, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if errors.Is(err, fs.ErrExist) {
		return nil, errRefLocked
	}
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", lock, err)
	}
	_, werr := f.Write(rec)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		_ = os.Remove(lock)
		return nil, fmt.Errorf("lock %s: %w", lock, werr)
	}
	return &lockFile{path: lock, record: rec}, nil
}

// release removes the lock.
func (l *lockFile) release() error {
	if err := os.Remove(l.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("unlock %s: %w", l.path, err)
	}
	return nil
}

// writeTemp writes content to a new file of dir, named after kind and the
// writing process (so that what a dead process left can be cleaned up).
// Its mode is git's for refs (0666 less the umask): it may become one.
func writeTemp(dir, kind string, self holder, content []byte) (string, error) {
	name := filepath.Join(dir, tempPrefix(kind, self)+strconv.FormatUint(rand.Uint64(), 36))
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return "", err
	}
	_, werr := f.Write(content)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		_ = os.Remove(f.Name())
		return "", werr
	}
	return f.Name(), nil
}

func tempPrefix(kind string, h holder) string {
	return kind + "-" + strconv.Itoa(h.pid) + "-" + strconv.FormatUint(h.start, 10) + "-"
}

// errLockRaced: the lock changed while it was being broken; nothing was
// broken (or what was moved aside is back), the caller retries as for any
// busy lock.
var errLockRaced = errors.New("ref lock changed while being broken")

// breakDeadLock removes lock if, and only if, it still holds the record of
// a dead holder of this machine, and reports whether it did. Breakers take
// turns on an flock of <git dir>/prsaga/break (released by the kernel if a
// breaker dies), re-read the lock under it, and move it aside with a
// rename, checking that what they moved is the very lock judged — so two
// mergers racing to break the same lock break it once, and a lock taken
// after the break is never touched.
func (r *Repo) breakDeadLock(lock string) (broken bool, err error) {
	content, err := os.ReadFile(lock)
	if err != nil {
		return false, nil // gone already, or unreadable: not ours to break
	}
	h, ok := parseRecord(content)
	if !ok || judge(h) != holderDead {
		return false, nil
	}
	dir := filepath.Join(r.dir, workDir)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return false, fmt.Errorf("break %s: %w", lock, err)
	}
	guard, err := os.OpenFile(filepath.Join(dir, "break"), os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return false, fmt.Errorf("break %s: %w", lock, err)
	}
	defer guard.Close() // closing releases the flock
	if err := syscall.Flock(int(guard.Fd()), syscall.LOCK_EX); err != nil {
		return false, fmt.Errorf("break %s: flock: %w", lock, err)
	}
	if now, err := os.ReadFile(lock); err != nil || !bytes.Equal(now, content) {
		return false, nil // another breaker was first; a new lock is respected
	}
	self, _ := me()
	aside := filepath.Join(dir, tempPrefix("broken", self)+strings.TrimSuffix(filepath.Base(lock), ".lock"))
	if err := os.Rename(lock, aside); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return false, fmt.Errorf("break %s: %w", lock, err)
	}
	if moved, err := os.ReadFile(aside); err != nil || !bytes.Equal(moved, content) {
		// Only an outside hand (an operator removing and someone retaking
		// the lock between the read and the rename) gets here: put the
		// lock back unless yet another one was taken meanwhile.
		if lerr := os.Link(aside, lock); lerr == nil || errors.Is(lerr, fs.ErrExist) {
			_ = os.Remove(aside)
		}
		return false, errLockRaced
	}
	if err := os.Remove(aside); err != nil {
		return false, fmt.Errorf("break %s: %w", lock, err)
	}
	removeLitter(dir, h)
	return true, nil
}

// removeLitter removes the files a dead holder left in dir.
func removeLitter(dir string, dead holder) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		for _, kind := range []string{"holder", "ref", "broken"} {
			if strings.HasPrefix(e.Name(), tempPrefix(kind, dead)) {
				_ = os.Remove(filepath.Join(dir, e.Name()))
			}
		}
	}
}

// describeLock says who holds a lock, for the busy error.
func describeLock(lock string) string {
	b, err := os.ReadFile(lock)
	if err != nil {
		return ""
	}
	h, ok := parseRecord(b)
	if !ok {
		return "not a prsaga lock"
	}
	return fmt.Sprintf("held by prsaga pid %d on %s, %s", h.pid, h.host, judge(h))
}
