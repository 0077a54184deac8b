//go:build unix

package gitloose

import (
	"errors"
	"io/fs"

	"golang.org/x/sys/unix"

	"github.com/prsaga/prsaga/platform/internal/fdread"
)

// ReadFile returns the whole content of file name, reading it into a
// buffer of hint bytes at first. Errors are *fs.PathError around the
// errno, as os.ReadFile's (errors.Is(err, fs.ErrNotExist) holds for a
// missing file; a directory fails its read with EISDIR).
//
// os.OpenFile offers every file to Go's poller, which for a regular file
// costs four fcntl and an epoll_ctl that fails besides the open, and
// os.ReadFile adds an fstat: here it is the open, the reads and the close.
func ReadFile(name string, hint int) ([]byte, error) {
	return AppendFile(make([]byte, 0, max(hint, 64)), name)
}

// AppendFile is ReadFile appending to b, for a caller that reuses its
// buffers: the content is b[len(b):] of the result.
func AppendFile(b []byte, name string) ([]byte, error) {
	var fd int
	var err error
	for {
		fd, err = unix.Open(name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	defer unix.Close(fd)
	return fdread.Append(b, fd, name)
}
