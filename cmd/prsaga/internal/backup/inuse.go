package backup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// InUse names what of a deployment is open right now — a service's
// database held by a process, the search index's writer lock held — so
// that restore can refuse to pull files from under running services.
// Empty: nothing found open. It looks at the files themselves, so it sees
// every process on this host, whichever way it was started.
func InUse(dbDir, indexDir string) []string {
	var out []string
	for _, svc := range services {
		path := filepath.Join(dbDir, svc+".sqlite")
		if open, err := sqliteOpen(path); err != nil {
			out = append(out, fmt.Sprintf("%s: cannot tell whether it is open: %v", path, err))
		} else if open {
			out = append(out, fmt.Sprintf("the %s database %s is open in a running process", svc, path))
		}
	}
	if held, err := flockHeld(filepath.Join(indexDir, "writer.lock")); err != nil {
		out = append(out, fmt.Sprintf("%s: cannot tell whether an indexer holds it: %v", indexDir, err))
	} else if held {
		out = append(out, fmt.Sprintf("an indexer holds the search index %s", indexDir))
	}
	return out
}

// flockHeld reports whether another open file holds an flock on path (the
// indexer's writer lock, bleveindex): trying it does not block, and a lock
// taken is let go at once.
func flockHeld(path string) (bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false, nil
}
