//go:build unix

// Package fdread reads an open file descriptor to its end without an
// *os.File: os.NewFile and os.OpenFile offer the descriptor to Go's poller,
// which for a regular file costs fcntl and epoll_ctl calls that do nothing.
package fdread

import (
	"errors"
	"io/fs"

	"golang.org/x/sys/unix"
)

// Append reads fd to its end, appending to b; the content is b[len(b):]
// of the result. A read error is an *fs.PathError naming name.
func Append(b []byte, fd int, name string) ([]byte, error) {
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
