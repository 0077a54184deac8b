package reflock

import (
	"errors"
	"os"
	"syscall"
)

// The ref's new value and a spare file.
//
// A ref moves by a rename of a file holding its new value over it, so
// every update used to create a file and free the ref's old one: on this
// VM's ext4 (online discard) that costs 120–220 µs of CPU, of a saga's ~4
// ms. Where the kernel can exchange two names atomically
// (renameat2 RENAME_EXCHANGE), the new value's file is exchanged with the
// ref instead: the ref gets the new file, the work directory the old one,
// which the Locker keeps as its spare and overwrites with the next new
// value — no inode made or freed, ~10 µs.
//
// What a reader of the ref sees is as with a rename: the old file whole or
// the new one whole, the exchange being one atomic step under the ref's
// lock. What makes overwriting the old file safe is that nobody reads it
// any more: a reader that opened the ref before the exchange could still
// hold it, and git's protocol promises such a reader the old value for as
// long as it holds the file. So a spare is overwritten only when no one
// else has it open, which the kernel tells: a write lease (F_SETLEASE) is
// granted only on a file with no other open descriptor in the system — and
// the spare has no name outside the work directory, so no new reader can
// come after the check (reuse, spare_linux.go). A spare someone holds, one
// of another owner (leases need the owner), with a second link, not
// exactly the new value's length, or not a regular file is removed instead
// and a fresh file written, as before. Only local file systems take part
// (ext4, XFS, btrfs, tmpfs…): a lease cannot see another node's readers.
//
// Crash safety is the rename's: the spare is written and (sync mode)
// fsynced before the exchange, the exchange is atomic, and in process mode
// (no fsyncs, design §5) a power loss may lose what the ref pointed to
// anyway. A spare is named like the new value's temporary file
// ("ref-<proc>-…"), so what a dead merger leaves is swept with its other
// files.

// newValue writes content to the file that will become the ref: the spare
// when it can serve, else a fresh temporary file of dir.
func (r *Locker) newValue(dir string, self holder, content []byte) (string, error) {
	if r.spare != "" {
		spare := r.spare
		r.spare = ""
		switch err := reuse(spare, content); {
		case err == nil:
			return spare, nil
		case errors.Is(err, errNoLeases):
			r.noSpare = true
		}
		_ = os.Remove(spare)
	}
	return writeTemp(dir, "ref", self, content)
}

// install moves file, holding the new value, to ref: exchanged with a
// loose ref that is a regular file (the old file becomes the spare), else
// renamed over it (a packed-only ref, a symbolic link, or no exchange here).
func (r *Locker) install(file, ref string) error {
	if !r.fsChecked {
		r.fsChecked = true
		r.noSpare = r.noSpare || !localFS(r.dir)
	}
	if !r.noSpare && regular(ref) {
		err := exchange(file, ref)
		if err == nil {
			r.spare = file
			return nil
		}
		if !errors.Is(err, errNoExchange) {
			return err
		}
		r.noSpare = true
	}
	// rename(2) itself: os.Rename first stats the target (a directory
	// there would fail the rename anyway).
	return syscall.Rename(file, ref)
}

var (
	// errNoLeases: the kernel or file system grants no write leases here:
	// spares are never reused.
	errNoLeases = errors.New("no file leases")
	// errNoExchange: no atomic exchange of names here: refs are renamed
	// over.
	errNoExchange = errors.New("no rename exchange")
)

// regular reports whether name is a regular file, not following a link.
func regular(name string) bool {
	fi, err := os.Lstat(name)
	return err == nil && fi.Mode().IsRegular()
}
