//go:build unix

package gitobj

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// The small files of a merge (refs, loose objects, the config, the ref's
// new value) are opened with open(2) alone. os.OpenFile offers every file
// to Go's poller, and for a regular file that costs four fcntl and an
// epoll_ctl that fails, besides the open. A merge opens eight such files;
// those it only reads, platform/gitloose reads.

// OpenFile is os.OpenFile for a regular file or a directory, which the
// poller has no use for; the file does blocking I/O, as os.OpenFile's
// does once the poller refused it.
func OpenFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	fd, err := open(name, flag, uint32(perm.Perm()))
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return os.NewFile(uintptr(fd), name), nil
}

func open(name string, flag int, perm uint32) (int, error) {
	for {
		fd, err := unix.Open(name, flag|unix.O_CLOEXEC, perm)
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}
