package reflock

import (
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/prsaga/prsaga/services/merger/gitrepo/gitobj"
)

// A kept holder file: creating a file costs this VM 80–300 µs of CPU,
// opening one ~9 µs, so a Locker writes its holder file once and links
// that same file as each lock it takes (the design before liveness flocks
// did too). The file, "keep-<proc>-…" in the work directory, holds a
// complete record saying live=flock, and the liveness rule of every lock
// holds for it because of one invariant:
//
//	the kept file is linked as a lock only while its holder holds an
//	exclusive flock on it (taken, without waiting, before the link;
//	dropped only after the lock's name is removed).
//
// So a breaker that finds the flock free (and, judging, keeps its shared
// flock until it has checked the lock's name is still that very file)
// either judges the lock of a dead holder, or finds the name gone or
// another file: the live holder cannot take the exclusive flock — hence
// cannot link the file as a lock — while the breaker's shared one is held.
// When the flock cannot be taken at once (a breaker or sweeper is judging
// the file), the lock is taken with a fresh holder file instead
// (acquireUnnamed). Between locks no descriptor is kept: a merger serving
// thousands of repositories stays within its file limit.
//
// A kept file whose flock is free is not a lock, but its holder may well
// be alive between two locks: a sweeper (removeDeadHolders) removes such a
// file alone, never the holder's other files, unless the holder's identity
// says it is dead; a live holder that finds its file gone writes another.

// keepLock takes lock by linking this Locker's kept holder file, written
// first if need be. gitobj.ErrNoUnnamed where files without a name are not
// supported (the kept file is written as one, then named, so that it never
// exists incomplete) or flocks are refused; errKeepBusy when the kept
// file's flock is held by someone judging it.
func (r *Locker) keepLock(dir, lock string, self holder) (*Lock, error) {
	for range 2 { // a second time after the kept file vanished
		f, rec, err := r.openKept(dir, self)
		if err != nil {
			return nil, err
		}
		if err := crashAt(r.Crash, CrashHolderWritten); err != nil {
			return nil, err // a crashed process cleans nothing up
		}
		err = gitobj.LinkUnnamed(f, lock) // the open file itself, even if its name was just replaced
		if errors.Is(err, fs.ErrNotExist) && !r.keptExists() {
			_ = f.Close() // removed by a sweeper since opened: write another
			r.kept = ""
			continue
		}
		if errors.Is(err, gitobj.ErrNoUnnamed) {
			_ = f.Close()
			return nil, err
		}
		return r.linked(lock, f, rec, self, err)
	}
	return nil, errKeepBusy
}

// errKeepBusy: the kept holder file cannot serve this lock; a fresh one
// does.
var errKeepBusy = errors.New("kept holder file busy")

// openKept opens the kept holder file with its exclusive flock, writing
// it first if there is none.
func (r *Locker) openKept(dir string, self holder) (*os.File, []byte, error) {
	if r.kept != "" {
		f, err := gitobj.OpenFile(r.kept, os.O_RDWR, 0)
		if errors.Is(err, fs.ErrNotExist) {
			r.kept = ""
		} else if err != nil {
			return nil, nil, err
		} else {
			err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
			if err != nil {
				_ = f.Close()
				return nil, nil, errKeepBusy
			}
			return f, r.keptRecord, nil
		}
	}
	f, err := gitobj.OpenUnnamed(dir, 0o666)
	if errors.Is(err, fs.ErrNotExist) { // the work directory was removed
		if err = os.MkdirAll(dir, 0o777); err == nil {
			f, err = gitobj.OpenUnnamed(dir, 0o666)
		}
	}
	if err != nil {
		return nil, nil, err
	}
	rec, err := writeRecord(f, self)
	if err == nil && !lockedLive(rec) {
		err = gitobj.ErrNoUnnamed // no flocks here: judged by identity, a lock needs a fresh record
	}
	if err != nil {
		_ = f.Close()
		return nil, nil, err
	}
	name := filepath.Join(dir, tempPrefix("keep", self)+strconv.FormatUint(rand.Uint64(), 36))
	if err := gitobj.LinkUnnamed(f, name); err != nil {
		_ = f.Close()
		return nil, nil, err
	}
	r.kept, r.keptRecord = name, rec
	return f, rec, nil
}

func (r *Locker) keptExists() bool {
	_, err := os.Lstat(r.kept)
	return err == nil
}

func lockedLive(rec []byte) bool {
	h, _ := parseRecord(rec)
	return h.live
}

// removeKept is the sweep of a kept holder file judged dead: dead by its
// holder's identity, it goes with the holder's other files; dead by its
// free flock only, it goes alone, and only when it is not a lock too (a
// dead holder's lock is broken by BreakDead, which removes the rest).
func removeKept(dir, name string, f *os.File, h holder) {
	if judgePid(h) == holderDead {
		removeLitter(dir, h)
		return
	}
	if fi, err := f.Stat(); err == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink == 1 {
			_ = os.Remove(filepath.Join(dir, name))
		}
	}
}
