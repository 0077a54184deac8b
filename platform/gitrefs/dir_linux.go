package gitrefs

import (
	"io/fs"
	"os"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/prsaga/prsaga/platform/internal/fdread"
)

// noOpenat2 is set the first time the kernel refuses openat2 as a system
// call, so that later Dirs go to os.Root at once.
var noOpenat2 atomic.Bool

func openFast(dir string) int {
	if noOpenat2.Load() {
		return -1
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1 // os.Root, which opened it, answers
	}
	return fd
}

func closeFast(fd int) {
	if fd >= 0 {
		_ = unix.Close(fd)
	}
}

func openBeneath(dirfd int, name string) (*os.File, error) {
	fd, err := openat2Beneath(dirfd, name)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), name), nil
}

// readBeneath is the content of name, read as openBeneath's file would be
// (the same errors) without making one.
func readBeneath(dirfd int, name string) ([]byte, error) {
	fd, err := openat2Beneath(dirfd, name)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	// Sized for a loose ref: a sha or "ref: <name>", and a newline.
	return fdread.Append(make([]byte, 0, 64), fd, name)
}

func openat2Beneath(dirfd int, name string) (int, error) {
	how := unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS,
	}
	for {
		fd, err := unix.Openat2(dirfd, name, &how)
		switch err {
		case nil:
			return fd, nil
		case unix.EINTR, unix.EAGAIN:
			// EAGAIN: a rename raced the lookup, which RESOLVE_BENEATH
			// leaves to the caller to retry (git renames refs into place).
			continue
		case unix.ENOSYS, unix.EPERM:
			// No openat2 (before Linux 5.6) or a seccomp filter refusing
			// it: os.Root gives the answer, also for a file whose own
			// EPERM this was.
			noOpenat2.Store(true)
			return -1, errUnsupported
		case unix.EXDEV:
			return -1, &fs.PathError{Op: "openat", Path: name, Err: errEscapes}
		default:
			return -1, &fs.PathError{Op: "openat", Path: name, Err: err}
		}
	}
}
