package gitobj

import (
	"errors"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// OpenUnnamed creates a file with no name in dir (open(2) O_TMPFILE), to
// be given its name by LinkUnnamed once complete: a crash before leaves
// nothing behind, and the name appears with the whole content at once.
// ErrNoUnnamed where the kernel or the file system cannot (the caller
// then writes a named temporary file); fs.ErrNotExist if dir is missing.
func OpenUnnamed(dir string, perm os.FileMode) (*os.File, error) {
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, uint32(perm.Perm()))
	switch {
	case err == nil:
		return os.NewFile(uintptr(fd), dir+"/(unnamed)"), nil
	case errors.Is(err, unix.ENOENT):
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	case errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.EISDIR), errors.Is(err, unix.EINVAL):
		return nil, ErrNoUnnamed // O_TMPFILE unknown to the kernel or the file system
	}
	return nil, &os.PathError{Op: "open", Path: dir, Err: err}
}

// LinkUnnamed gives a file of OpenUnnamed its name, which must not exist
// (fs.ErrExist otherwise: link(2) never replaces). It links through
// /proc/self/fd, which needs no privilege (AT_EMPTY_PATH does); ErrNoUnnamed
// where /proc is not mounted.
func LinkUnnamed(f *os.File, name string) error {
	proc := "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
	err := unix.Linkat(unix.AT_FDCWD, proc, unix.AT_FDCWD, name, unix.AT_SYMLINK_FOLLOW)
	if err == nil {
		return nil
	}
	if errors.Is(err, unix.ENOENT) {
		if _, serr := os.Stat(proc); serr != nil {
			return ErrNoUnnamed
		}
	}
	return &os.LinkError{Op: "link", Old: f.Name(), New: name, Err: err}
}
