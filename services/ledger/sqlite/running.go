package sqlite

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// ErrRunning: a ledger (or another process writing the ledger's tables:
// prsaga watchdog --once, a repair) has the database open.
var ErrRunning = errors.New("the ledger's database is in use")

// Every process that writes the ledger's tables holds a shared flock on
// <database>.running while it has the database open; a repair takes it
// exclusively without waiting. The kernel drops a flock when its process
// dies however it dies, so no stale lock survives a crash, unlike a pid
// file; unlike an HTTP health probe it does not depend on which address a
// ledger listens on, and it covers the ledger's API retries and watchdog,
// which write without the bus. It is host-local, as a SQLite file is.

// HoldShared marks the database at path as in use until release is
// called. Several holders share it.
func HoldShared(path string) (release func() error, err error) {
	return hold(path, syscall.LOCK_SH)
}

// HoldExclusive takes the database at path for a process that must be its
// only writer; ErrRunning (wrapped) when another holds it.
func HoldExclusive(path string) (release func() error, err error) {
	return hold(path, syscall.LOCK_EX)
}

func hold(path string, how int) (func() error, error) {
	name := path + ".running"
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", name, err)
	}
	if err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s: %w", name, ErrRunning)
		}
		return nil, fmt.Errorf("flock %s: %w", name, err)
	}
	return f.Close, nil // closing drops the flock
}
