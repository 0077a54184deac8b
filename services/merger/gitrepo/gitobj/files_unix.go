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
// epoll_ctl that fails, besides the open; os.ReadFile adds an fstat. A
// merge opens eight such files.

// ReadFile returns the whole content of file name, reading it into a
// buffer of hint bytes at first. Errors are *fs.PathError around the
// errno, as os.ReadFile's (errors.Is(err, fs.ErrNotExist) holds for a
// missing file; a directory fails its read with EISDIR).
func ReadFile(name string, hint int) ([]byte, error) {
	return AppendFile(make([]byte, 0, max(hint, 64)), name)
}

// AppendFile is ReadFile appending to b, for a caller that reuses its
// buffers: the content is b[len(b):] of the result.
func AppendFile(b []byte, name string) ([]byte, error) {
	fd, err := open(name, unix.O_RDONLY, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	defer unix.Close(fd)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := unix.Read(fd, b[len(b):cap(b)])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: name, Err: err}
		}
		if n == 0 {
			return b, nil
		}
		b = b[:len(b)+n]
	}
}

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
