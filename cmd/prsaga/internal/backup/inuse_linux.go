package backup

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// shmDMS is the byte of a WAL database's -shm file on which every
// connection holds a shared lock while it is open (SQLite's "dead man
// switch", https://sqlite.org/walformat.html: the locks of the wal-index
// are bytes 120–127 of the file, the DMS byte follows them).
const shmDMS = 128

// sqliteOpen reports whether a connection, in any process, has the WAL
// database at path open: a write lock on its DMS byte would conflict.
// Open file description locks (F_OFD_GETLK) are used because they
// conflict with SQLite's POSIX locks even within this process.
func sqliteOpen(path string) (bool, error) {
	f, err := os.Open(path + "-shm")
	if errors.Is(err, os.ErrNotExist) {
		return false, nil // no connection since the last one closed (it removes the -shm)
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: shmDMS, Len: 1}
	if err := unix.FcntlFlock(f.Fd(), unix.F_OFD_GETLK, &lk); err != nil {
		return false, err
	}
	return lk.Type != unix.F_UNLCK, nil
}
