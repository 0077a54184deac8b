package reflock

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/prsaga/prsaga/platform/fault"
	"github.com/prsaga/prsaga/services/merger/gitrepo/gitobj"
)

// Update moves refs/heads/<branch> from old to new under git's ref
// lock, the way git moves a ref — a ref file, once in place, is never
// written again; a new file takes its place:
//
//  1. take refs/heads/<branch>.lock (reflock.go: created exclusively,
//     holding this process's record) — if it exists, another writer (git,
//     or another merger) holds the ref: ErrLocked, and the lock is left
//     alone, unless it holds the record of a dead merger (wherever it ran,
//     liveness.go): then it is broken and taken once more;
//  2. under the lock, re-read the ref (loose, else packed) and compare it
//     with old — a mismatch is ErrChanged;
//  3. write "<new>\n" to a new file of the work directory next to the
//     refs (created exclusively), fsynced in sync mode;
//  4. check the lock is still this update's (Lock.verify: the file at the
//     lock's name is the one taken, holding its record) — if it was
//     broken meanwhile, ErrLockLost, and the ref is not moved;
//  5. rename the new file over the ref (atomic; a packed-only ref is
//     thereby overridden, as git does), release the lock, and in sync
//     mode fsync the ref's directory.
//
// Why the new value is not written into the lock itself, as git does: the
// lock holds the holder's record, which is what lets a dead merger's lock
// be broken and a live one's be told apart (step 4). And renaming the
// lock's name over the ref would install whatever file has that name at
// the moment of the rename — after a break, another writer's lock; a file
// of our own can only ever install our own value.
//
// What is left between step 4 and step 5 is one rename: a merger frozen
// exactly there for longer than it takes to judge it dead (on NFS, the
// server's lease) can still rename its value over another writer's.
// docs/operating.md says which storage has that window.
//
// On every failure after step 1 the lock is released again (unless it was
// lost: then its name is someone else's). A crash leaves the ref at its
// old value (before the rename) or its new one (after), never empty or
// partly written; a lock it leaves behind names the dead process, and the
// next merge breaks it.
//
// r.Crash, if not nil, is a test seam called at the points a crash
// matters — CrashLockWritten, CrashRefMoved and CrashRenamed; an error
// from it ends Update there as a crash would, without clean-up. The fault
// point FaultRefChecked (platform/fault) is hit between steps 3 and 4.
//
// Update is not interrupted by a context: once the lock is taken it runs
// to the end (a few file operations), so that it never leaves the lock
// behind or the ref half moved.
func (r *Locker) Update(branch string, old, new plumbing.Hash) (err error) {
	ref := gitobj.LoosePath(r.dir, branch)
	lockPath := ref + ".lock"
	lock, err := r.Acquire(lockPath)
	if errors.Is(err, fs.ErrNotExist) {
		// A packed-only ref in a nested namespace may have no directory
		// yet (made on demand: looking it up each time costs a stat).
		if err := os.MkdirAll(filepath.Dir(ref), 0o777); err != nil {
			return fmt.Errorf("lock refs/heads/%s: %w", branch, err)
		}
		lock, err = r.Acquire(lockPath)
	}
	if errors.Is(err, ErrLocked) {
		broken, berr := r.BreakDead(lockPath)
		if berr != nil && !errors.Is(berr, ErrLockRaced) {
			return berr
		}
		if broken {
			lock, err = r.Acquire(lockPath)
		}
	}
	if errors.Is(err, ErrLocked) {
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
			err = errors.Join(err, lock.Release())
		}
	}()

	cur, err := gitobj.ReadRef(r.dir, branch)
	if err != nil {
		return err
	}
	if cur != old {
		return fmt.Errorf("refs/heads/%s is %s, expected %s: %w", branch, cur, old, ErrChanged)
	}
	self, _ := me()
	if tmp, err = writeTemp(filepath.Join(r.dir, WorkDir), "ref", self, []byte(new.String()+"\n"), r.durable); err != nil {
		return fmt.Errorf("write refs/heads/%s: %w", branch, err)
	}
	if err := crashAt(r.Crash, CrashLockWritten); err != nil {
		locked, tmp = false, "" // a crashed process cleans nothing up
		return err
	}
	if err := fault.Hit(FaultRefChecked); err != nil {
		return fmt.Errorf("commit refs/heads/%s: %w", branch, err)
	}
	if err := lock.verify(); err != nil {
		if errors.Is(err, ErrLockLost) {
			locked = false
			_ = lock.Release() // drops the file; the name is not ours
		}
		return fmt.Errorf("commit refs/heads/%s: %w", branch, err)
	}
	// rename(2) itself: os.Rename first stats the target (a directory
	// there would fail the rename anyway).
	if err := syscall.Rename(tmp, ref); err != nil {
		return fmt.Errorf("commit refs/heads/%s: %w", branch, &os.LinkError{Op: "rename", Old: tmp, New: ref, Err: err})
	}
	tmp = "" // it is the ref now
	if err := crashAt(r.Crash, CrashRefMoved); err != nil {
		locked = false
		return err
	}
	locked = false
	if err := lock.Release(); err != nil {
		return err
	}
	if err := crashAt(r.Crash, CrashRenamed); err != nil {
		return err
	}
	return r.durable.FsyncDir(filepath.Dir(ref))
}

// FaultRefChecked is the fault point (platform/fault) hit once the ref's
// old value was checked under the lock and its new value written, right
// before the lock is verified and the new value renamed over the ref.
const FaultRefChecked = "merger.ref-checked"

// Crash points of Update, for tests.
const (
	CrashHolderWritten = "holder-written" // a holder file written, the lock not linked yet
	CrashLockWritten   = "lock-written"   // locked, old value checked, new value written (fsynced in sync mode), not renamed
	CrashRefMoved      = "ref-moved"      // the ref moved, the lock not released yet
	CrashRenamed       = "renamed"        // the ref moved and the lock released, directory not fsynced
)

func crashAt(crash func(string) error, point string) error {
	if crash == nil {
		return nil
	}
	return crash(point)
}

// staleLockError is ErrLocked for an existing lock file, saying what an
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
	return fmt.Errorf("%s exists (%s): %w; if no git process is writing this repository, it was left by a crash: remove the file", lock, age, ErrLocked)
}
