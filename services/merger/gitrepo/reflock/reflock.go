package reflock

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/prsaga/prsaga/platform/fault"
	"github.com/prsaga/prsaga/services/merger/gitrepo/gitobj"
)

// Ref locks. A merger takes refs/heads/<b>.lock exactly as git does —
// created exclusively, never taken over from a live writer — but its lock
// file holds a holder record (lockholder.go) instead of the new ref value,
// and the new value reaches the ref through a temporary file of its own,
// renamed over the ref while the lock is held. git and other writers only
// care that the lock exists; nobody but the holder reads it.
//
// The lock appears with its record complete: the record is written to a
// holder file first, which is then hard-linked as the lock (link(2) is
// exclusive like O_EXCL). Where the kernel and file system allow (files
// without a name, O_TMPFILE, and flocks), a Locker writes one holder file
// and keeps it in the work directory, linking that same file as each lock
// it takes — no file is created per lock (kept.go says why this is as
// safe as a fresh one). Otherwise, or when the kept file is busy, the
// holder file is fresh: without a name where possible (a crash before the
// link leaves nothing), else a named file of the work directory, removed
// once linked, which a crash can leave behind for the next merger to sweep.
// Every way makes the same lock with the same record: mergers of any
// kind, older ones included, judge and break each other's locks alike.
//
// The holder keeps an flock on its lock for as long as it holds it
// (liveness.go). A lock whose record names a dead holder — its flock gone,
// or, for records without one, a dead process of this machine and pid
// space — is broken (BreakDead); any other lock — git's, a live
// process's anywhere, an older merger's of another machine — is respected.

// WorkDir is where a merger keeps its temporary files inside a git
// directory: git ignores unknown directories there, and it is on the same
// file system as refs/, so renames from it are atomic.
const WorkDir = "prsaga"

// FaultRefLocked is the fault point (platform/fault) hit right after a ref
// lock is taken: crash tests make a merger die there, holding the lock.
const FaultRefLocked = "merger.ref-locked"

// Locker takes and breaks the ref locks of one repository, and moves its
// refs under them. Not safe for concurrent use: its owner (gitrepo.Repo)
// serialises a repository's merges; other processes are kept out by the
// lock files themselves.
type Locker struct {
	dir     string // the git directory
	durable gitobj.Durability
	swept   bool // dead mergers' files were removed from the work directory
	// Named makes holder files named ones even where files without a
	// name (O_TMPFILE) are supported: set where those are refused, and by
	// tests of the named path.
	Named bool
	// kept is this Locker's kept holder file, "" before it is written
	// (kept.go), keptRecord its content; noKeep: no kept file here
	// (no files without a name, or no flocks).
	kept       string
	keptRecord []byte
	noKeep     bool
	// Crash is Update's crash seam for tests (see Update); nil in production.
	Crash func(point string) error
}

// New is the Locker of git directory dir.
func New(dir string, d gitobj.Durability) *Locker { return &Locker{dir: dir, durable: d} }

var (
	// ErrLocked: <ref>.lock exists — another writer is updating the ref.
	ErrLocked = errors.New("ref is locked by another writer")
	// ErrChanged: the ref no longer has the value the merge was built on.
	ErrChanged = errors.New("ref changed concurrently")
)

// Lock is a ref lock this process holds.
type Lock struct {
	path   string
	record []byte
	// file is the lock's file, open for as long as the lock is held: it
	// carries the lock's flock (where the file system grants one), and
	// tells the lock at path apart from one taken after it was broken
	// (verify).
	file *os.File
}

// Acquire creates lock holding this process's record, atomically with
// its content and its flock: a holder file of the work directory —
// the Locker's kept one (kept.go), else a fresh one — is flocked, written,
// and hard-linked to the lock's name; link(2) fails if the name exists.
// A fresh holder file has no name where the kernel and file system allow
// (O_TMPFILE: nothing left behind by a crash before the link); else it is
// named, and its name removed once linked. No crash can leave a lock
// without its record or one whose record claims a flock never taken. Where hard links are not supported it falls
// back to O_EXCL and a write. ErrLocked if the lock exists.
func (r *Locker) Acquire(lock string) (*Lock, error) {
	self, _ := me()
	dir := filepath.Join(r.dir, WorkDir)
	if !r.swept {
		if err := os.MkdirAll(dir, 0o777); err != nil {
			return nil, fmt.Errorf("lock %s: %w", lock, err)
		}
		r.swept = true
		removeDeadHolders(dir)
	}
	if !r.Named && !r.noKeep {
		l, err := r.keepLock(dir, lock, self)
		switch {
		case errors.Is(err, gitobj.ErrNoUnnamed):
			r.noKeep = true // never ask again
		case !errors.Is(err, errKeepBusy):
			return l, err
		}
	}
	if !r.Named {
		l, err := r.acquireUnnamed(dir, lock, self)
		if !errors.Is(err, gitobj.ErrNoUnnamed) {
			return l, err
		}
		r.Named = true // this file system has none: never ask again
	}
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, fmt.Errorf("lock %s: %w", lock, err)
	}
	f, rec, err := createRecord(filepath.Join(dir, tempPrefix("holder", self)+strconv.FormatUint(rand.Uint64(), 36)), self)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", lock, err)
	}
	holderPath := f.Name()
	if err := crashAt(r.Crash, CrashHolderWritten); err != nil {
		return nil, err // a crashed process cleans nothing up
	}
	err = os.Link(holderPath, lock)
	_ = os.Remove(holderPath)
	return r.linked(lock, f, rec, self, err)
}

// acquireUnnamed is Acquire with a holder file without a name;
// gitobj.ErrNoUnnamed where there are none.
func (r *Locker) acquireUnnamed(dir, lock string, self holder) (*Lock, error) {
	f, err := gitobj.OpenUnnamed(dir, 0o666)
	if errors.Is(err, fs.ErrNotExist) { // the work directory was removed
		if err = os.MkdirAll(dir, 0o777); err == nil {
			f, err = gitobj.OpenUnnamed(dir, 0o666)
		}
	}
	if err != nil {
		if errors.Is(err, gitobj.ErrNoUnnamed) {
			return nil, err
		}
		return nil, fmt.Errorf("lock %s: %w", lock, err)
	}
	rec, err := writeRecord(f, self)
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("lock %s: %w", lock, err)
	}
	if err := crashAt(r.Crash, CrashHolderWritten); err != nil {
		return nil, err // a crashed process cleans nothing up
	}
	err = gitobj.LinkUnnamed(f, lock)
	if errors.Is(err, gitobj.ErrNoUnnamed) {
		_ = f.Close()
		return nil, err
	}
	return r.linked(lock, f, rec, self, err)
}

// linked completes Acquire once the holder file f was linked to lock's
// name (err nil) or not.
func (r *Locker) linked(lock string, f *os.File, rec []byte, self holder, err error) (*Lock, error) {
	switch {
	case err == nil:
		l := &Lock{path: lock, record: rec, file: f}
		if err := fault.Hit(FaultRefLocked); err != nil {
			return nil, errors.Join(err, l.Release())
		}
		return l, nil
	case errors.Is(err, fs.ErrExist):
		_ = f.Close()
		return nil, ErrLocked
	case errors.Is(err, syscall.EPERM), errors.Is(err, syscall.ENOTSUP), errors.Is(err, syscall.EOPNOTSUPP), errors.Is(err, syscall.EMLINK):
		_ = f.Close()
		return createLock(lock, self)
	}
	_ = f.Close()
	return nil, fmt.Errorf("lock %s: %w", lock, err)
}

// createRecord creates path exclusively, takes its flock if the file
// system allows, and writes the record saying whether it did. The flock
// comes first, so a complete record claiming one is never without it while
// its holder lives.
func createRecord(path string, self holder) (*os.File, []byte, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return nil, nil, err
	}
	rec, err := writeRecord(f, self)
	if err != nil {
		_ = f.Close()
		_ = os.Remove(path)
		return nil, nil, err
	}
	return f, rec, nil
}

// writeRecord takes f's flock if the file system allows, and writes the
// record saying whether it did.
func writeRecord(f *os.File, self holder) ([]byte, error) {
	rec := self.record(lockLive(f))
	if _, err := f.Write(rec); err != nil {
		return nil, err
	}
	return rec, nil
}

// removeDeadHolders removes what dead mergers left in a work directory: a
// holder file outlives its process only when it died while taking a lock;
// with it go the process's other temporary files. An older merger's holder
// file (one per repository and process, kept) is judged the same way.
func removeDeadHolders(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		kept := strings.HasPrefix(e.Name(), "keep-")
		if !kept && !strings.HasPrefix(e.Name(), "holder-") {
			continue
		}
		f, _, h, ok := openRecord(filepath.Join(dir, e.Name()))
		if f == nil {
			continue
		}
		switch {
		case !ok || judgeLock(h, f) != holderDead:
		case kept:
			removeKept(dir, e.Name(), f, h)
		default:
			removeLitter(dir, h)
		}
		_ = f.Close()
	}
}

// createLock is the fallback of Acquire without hard links: a crash
// between the create and the write leaves an empty lock, which is never
// broken (an operator removes it, as with git's).
func createLock(lock string, self holder) (*Lock, error) {
	f, rec, err := createRecord(lock, self)
	if errors.Is(err, fs.ErrExist) {
		return nil, ErrLocked
	}
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", lock, err)
	}
	return &Lock{path: lock, record: rec, file: f}, nil
}

// ErrLockLost: the ref lock an update held is no longer its own — broken
// by another merger that judged its holder dead (on NFS: this process was
// cut off from the server for longer than the server's lease, and its
// flock was dropped), and maybe taken since by another writer. The ref
// was not moved; nothing of the update is left. Retrying is safe: the
// merge is planned again on whatever the branch holds then.
var ErrLockLost = errors.New("ref lock lost")

// verify checks that the lock at l's path is still l: the file the name
// leads to is the very file l holds open (same device and inode, stat of
// the name against fstat of l's descriptor: while l holds it open, its
// inode cannot be reused), and it holds l's record, nonce included (read
// through l's descriptor: no other descriptor of the lock is opened, whose
// close would drop the lock where the kernel emulates flocks with POSIX
// locks, as on NFS). ErrLockLost when it is not — the lock was broken, and
// the name now holds nothing, a later lock, or a file put there by hand.
func (l *Lock) verify() error {
	at, err := os.Stat(l.path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s is gone: %w", l.path, ErrLockLost)
	}
	if err != nil {
		return fmt.Errorf("check lock %s: %w", l.path, err)
	}
	own, err := l.file.Stat()
	if err != nil {
		return fmt.Errorf("check lock %s: %w", l.path, err)
	}
	if !os.SameFile(at, own) {
		return fmt.Errorf("%s is another file than the lock taken: %w", l.path, ErrLockLost)
	}
	b := make([]byte, len(l.record)+1)
	n, err := l.file.ReadAt(b, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("check lock %s: %w", l.path, err)
	}
	if !bytes.Equal(b[:n], l.record) {
		return fmt.Errorf("%s no longer holds this lock's record: %w", l.path, ErrLockLost)
	}
	return nil
}

// Release removes the lock, then drops its flock: the other way round, a
// breaker could judge the lock dead in between and another writer take it,
// and this remove would remove theirs. A lock whose name is no longer its
// file (it was broken) is not removed: the name is someone else's now.
func (l *Lock) Release() error {
	var err error
	if sameFile(l.path, l.file) {
		err = os.Remove(l.path)
	}
	_ = l.file.Close()
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("unlock %s: %w", l.path, err)
	}
	return nil
}

// writeTemp writes content to a new file of dir, created exclusively,
// named after kind and the writing process (so that what a dead process
// left can be cleaned up), and fsynced as d says. Its mode is git's for
// refs (0666 less the umask): it may become one.
func writeTemp(dir, kind string, self holder, content []byte, d gitobj.Durability) (string, error) {
	name := filepath.Join(dir, tempPrefix(kind, self)+strconv.FormatUint(rand.Uint64(), 36))
	f, err := gitobj.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if errors.Is(err, fs.ErrNotExist) { // the work directory was removed
		if err = os.MkdirAll(dir, 0o777); err == nil {
			f, err = gitobj.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
		}
	}
	if err != nil {
		return "", err
	}
	_, werr := f.Write(content)
	if werr == nil {
		werr = d.FsyncOpen(f, name)
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		_ = os.Remove(name)
		return "", werr
	}
	return name, nil
}

// tempPrefix names a process's temporary files by its proc (unique where
// pids are not: every container's merger is pid 1), or, for an older
// merger's record without one, by pid and start time.
func tempPrefix(kind string, h holder) string {
	if h.proc != "" {
		return kind + "-" + h.proc + "-"
	}
	return kind + "-" + strconv.Itoa(h.pid) + "-" + strconv.FormatUint(h.start, 10) + "-"
}

// ErrLockRaced: the lock changed while it was being broken; nothing was
// broken (or what was moved aside is back), the caller retries as for any
// busy lock.
var ErrLockRaced = errors.New("ref lock changed while being broken")

// BreakDead removes lock if, and only if, it still holds the record of
// a dead holder (judgeLock), and reports whether it did. The file judged
// stays open meanwhile; breakers take turns on an flock of <git
// dir>/prsaga/break (released by the kernel if a breaker dies), check
// under it that the lock's name still is the very file judged, and move
// it aside with a rename, checking again that what they moved is that
// file — so several mergers racing to break the same lock break it once,
// and a lock taken after the break is never touched.
func (r *Locker) BreakDead(lock string) (broken bool, err error) {
	f, _, h, ok := openRecord(lock)
	if f == nil {
		return false, nil // gone already, or unreadable: not ours to break
	}
	defer f.Close()
	if !ok || judgeLock(h, f) != holderDead {
		return false, nil
	}
	dir := filepath.Join(r.dir, WorkDir)
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
	if !sameFile(lock, f) {
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
	if !sameFile(aside, f) {
		// Only an outside hand (an operator removing and someone retaking
		// the lock between the check and the rename) gets here: put the
		// lock back unless yet another one was taken meanwhile.
		if lerr := os.Link(aside, lock); lerr == nil || errors.Is(lerr, fs.ErrExist) {
			_ = os.Remove(aside)
		}
		return false, ErrLockRaced
	}
	if err := os.Remove(aside); err != nil {
		return false, fmt.Errorf("break %s: %w", lock, err)
	}
	removeLitter(dir, h)
	return true, nil
}

// sameFile reports whether path names the open file f. While f is open
// its inode cannot be reused, so equal inodes mean the very same file.
func sameFile(path string, f *os.File) bool {
	a, err := os.Stat(path)
	if err != nil {
		return false
	}
	b, err := f.Stat()
	return err == nil && os.SameFile(a, b)
}

// removeLitter removes the files a dead holder left in dir.
func removeLitter(dir string, dead holder) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		for _, kind := range []string{"holder", "keep", "ref", "broken"} {
			if strings.HasPrefix(e.Name(), tempPrefix(kind, dead)) {
				_ = os.Remove(filepath.Join(dir, e.Name()))
			}
		}
	}
}

// describeLock says who holds a lock, for the busy error.
func describeLock(lock string) string {
	f, _, h, ok := openRecord(lock)
	if f == nil {
		return ""
	}
	defer f.Close()
	if !ok {
		return "not a prsaga lock"
	}
	return fmt.Sprintf("held by prsaga pid %d on %s (pid namespace %s), %s", h.pid, h.host, h.pidns, judgeLock(h, f))
}
