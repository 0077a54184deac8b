package reflock

import (
	"errors"
	"io"
	"os"
	"syscall"
)

// Liveness of a lock's holder, wherever the holder runs.
//
// A holder's identity (pid, pid namespace, boot) can only be judged from
// its own pid space: a merger restarted in a new container, or running on
// another node sharing the repositories volume, could never tell a dead
// holder from a live one, and respected its lock for ever. The flock the
// holder keeps on the lock file says it instead: the kernel drops an flock
// when the last descriptor of its open file goes, so when its holder dies
// however it dies. flock locks belong to the inode, not to a pid space —
// processes in different pid namespaces on one kernel see each other's —
// and on NFS (v4, or v3 with lockd/NLM) Linux carries them to the server
// as whole-file locks, which the server drops when the client's lease or
// NLM state ends. A volume mounted with local_lock=flock or =all (or
// nolock) keeps them on one node: the merger refuses such a repos dir at
// start (gitrepo.NewReposWithOptions, platform/mountinfo). A holder that
// loses its flock while alive (cut off from the server past its lease)
// has its lock broken; its update then fails before the rename
// (Lock.verify, update.go).
//
// Why flock and not a POSIX (fcntl) lock: POSIX locks belong to the
// process, so a second descriptor of the same process would neither see
// them nor keep them (closing it drops them all). flock locks belong to the
// open file, so a breaker in the holder's own process sees them too — but
// on NFS they are emulated by POSIX locks, so the holder's own locks are
// recognised by the record's proc and never tested.

// maxRecord bounds what is read of a lock file: a record is a few hundred
// bytes; anything longer is not one.
const maxRecord = 4096

// lockLive takes the holder's exclusive flock on a file it just created,
// before writing its record: ok is false where the file system refuses it
// (the record then says nothing of liveness and is judged by identity).
func lockLive(f *os.File) bool {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
}

// flockFree reports whether nobody holds an exclusive flock on f's inode,
// by taking a shared one without waiting (kept until f is closed: a holder
// never flocks a file again once its record is written, and breakers
// share). An error means the file system could not say.
func flockFree(f *os.File) (bool, error) {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, syscall.EWOULDBLOCK):
		return false, nil
	}
	return false, err
}

// openRecord opens a file that may hold a record, reads it and parses it:
// ok is false for anything that is not a complete record (git's lock, an
// empty lock, a record being written). The caller closes f.
func openRecord(path string) (f *os.File, content []byte, h holder, ok bool) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, holder{}, false
	}
	content, err = io.ReadAll(io.LimitReader(f, maxRecord+1))
	if err != nil || len(content) > maxRecord {
		return f, content, holder{}, false
	}
	h, ok = parseRecord(content)
	return f, content, h, ok
}

// judgeLock says whether the holder h of the file f (a lock, or a holder
// file, holding h's record) is dead. This process's own locks are alive.
// A record with live=flock is dead when its flock is gone — unless its
// identity, judged from this pid space, says the process lives (a file
// system that only pretends to lock must not make us break a live lock we
// can see). Other records, and one without the proc that tells this
// process's own locks apart, are judged by identity alone.
func judgeLock(h holder, f *os.File) holderState {
	if self, _ := me(); h.proc != "" && h.proc == self.proc {
		return holderAlive
	}
	byPid := judgePid(h)
	if !h.live || h.proc == "" || byPid == holderAlive {
		return byPid
	}
	free, err := flockFree(f)
	switch {
	case err != nil:
		return holderUnknown
	case free:
		return holderDead
	}
	return holderAlive
}
