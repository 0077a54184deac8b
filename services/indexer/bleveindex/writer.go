package bleveindex

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/prsaga/prsaga/services/indexer"
)

// The index's writer, and the standbys waiting to become it.
//
// An indexer is the index's writer while it holds an flock on
// <dir>/writer.lock, for as long as it runs: a second indexer started on
// the same index finds it held and waits as a standby instead of giving up
// (and being restarted for ever by its supervisor), polling the flock every
// StandbyPoll. The kernel — or the lock manager of a shared volume — drops
// the flock when the writer dies however it dies, so a standby takes over
// within a poll of that. The writer keeps the flock across the close and
// open of a Reopen (bleve's own lock, on its root file, is let go there),
// so no standby slips in between; bleve's lock stays the last word on one
// opener (a reindex holds only that).
//
// The lock file holds the writer's description, for the standbys' /readyz.

// writerLockName is the writer's lock file inside the index directory:
// inside, not beside, so that it lives on the index's volume wherever that
// is mounted.
const writerLockName = "writer.lock"

// StandbyPoll is how often a standby tries the writer's lock.
var StandbyPoll = 100 * time.Millisecond

// ErrStandby is matched (errors.Is) by Ready's error, and the calls' ones,
// while the Index waits to become the index's writer.
var ErrStandby = errors.New("standby")

// writerLock is the flock a writer holds.
type writerLock struct {
	f    *os.File
	path string
}

// tryWriterLock takes the writer's lock of dir if it is free: nil, nil
// when another process (or another Index of this one) holds it.
func tryWriterLock(dir string) (*writerLock, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, writerLockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		_ = f.Close()
		return nil, nil
	}
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("flock %s: %w", path, err)
	}
	w := &writerLock{f: f, path: path}
	if !w.current() {
		// The directory was swapped (a reindex) between the open and the
		// flock: this file is not the index's lock any more.
		_ = f.Close()
		return nil, nil
	}
	// Who writes, for the standbys' message; a failure here costs only that.
	host, _ := os.Hostname()
	if err := f.Truncate(0); err == nil {
		_, _ = fmt.Fprintf(f, "pid %d on %s since %s\n", os.Getpid(), host, time.Now().UTC().Format(time.RFC3339))
	}
	return w, nil
}

// current reports whether the lock's path still names the locked file.
func (w *writerLock) current() bool {
	a, err := os.Stat(w.path)
	if err != nil {
		return false
	}
	b, err := w.f.Stat()
	return err == nil && os.SameFile(a, b)
}

func (w *writerLock) release() {
	if w != nil {
		_ = w.f.Close() // closing drops the flock
	}
}

// writerOf describes the holder of dir's writer lock, from its file.
func writerOf(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, writerLockName))
	if s := strings.TrimSpace(string(b)); err == nil && s != "" && len(s) < 256 && !strings.ContainsAny(s, "\n\r") {
		return "another indexer (" + s + ")"
	}
	return "another indexer"
}

// OpenWriter opens the index in dir (creating it if dir holds none) as its
// writer, or, when another indexer is the writer, returns it waiting as a
// standby: not open, Ready saying so, until Activate succeeds. An error is
// anything else that keeps the index from opening (a corrupt index, a
// reindex holding bleve's lock past lockTimeout).
func OpenWriter(dir string, lockTimeout time.Duration) (*Index, error) {
	if lockTimeout <= 0 {
		lockTimeout = DefaultLockTimeout
	}
	x := &Index{dir: dir, lockTimeout: lockTimeout}
	w, err := tryWriterLock(dir)
	if err != nil {
		return nil, fmt.Errorf("open index %s: %w", dir, err)
	}
	if w == nil {
		x.err = x.standby()
		return x, nil
	}
	idx, err := open(dir, lockTimeout)
	if err != nil {
		w.release()
		return nil, err
	}
	x.idx, x.writer = idx, w
	return x, nil
}

func (x *Index) standby() error {
	return fmt.Errorf("%w: index %s held by %s; this indexer takes over when it stops", ErrStandby, x.dir, writerOf(x.dir))
}

// Active reports whether the Index is the index's writer (or an Index of
// Open, which has no standby).
func (x *Index) Active() bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.idx != nil || x.writer != nil
}

// Activate waits until this Index is the index's writer and opens it: at
// once if it is; for a standby, until the writer lets go (polling every
// StandbyPoll), ctx ends or the Index is closed. While it waits, Ready
// says who holds the index. An error other than ctx's or ErrClosed is one
// that opening the index met once it was free.
func (x *Index) Activate(ctx context.Context) error {
	for {
		x.mu.RLock()
		closed, active := x.closed, x.idx != nil || x.writer != nil
		x.mu.RUnlock()
		switch {
		case closed:
			return fmt.Errorf("activate index %s: %w", x.dir, indexer.ErrClosed)
		case active:
			return nil
		}
		w, err := tryWriterLock(x.dir)
		if err != nil {
			x.setErr(err)
			return fmt.Errorf("activate index %s: %w", x.dir, err)
		}
		if w == nil {
			x.setErr(x.standby())
		} else if done, err := x.openAsWriter(w); done || err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(StandbyPoll):
		}
	}
}

// openAsWriter opens the index holding w; done once it is open, false to
// try again (bleve's lock held by a reindex, or the directory swapped).
func (x *Index) openAsWriter(w *writerLock) (done bool, err error) {
	idx, err := open(x.dir, x.lockTimeout)
	if errors.Is(err, ErrLocked) {
		w.release()
		x.setErr(fmt.Errorf("%w: index %s: %w", ErrStandby, x.dir, err))
		return false, nil
	}
	if err != nil {
		w.release()
		x.setErr(err)
		return false, err
	}
	if !w.current() { // a reindex swapped the directory while bleve's lock was awaited
		_ = idx.Close()
		w.release()
		return false, nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		_ = idx.Close()
		w.release()
		return true, fmt.Errorf("activate index %s: %w", x.dir, indexer.ErrClosed)
	}
	x.idx, x.writer, x.err = idx, w, nil
	return true, nil
}

func (x *Index) setErr(err error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.idx == nil && !x.closed {
		x.err = err
	}
}
