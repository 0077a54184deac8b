package bleveindex

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// rootBolt is where scorch (bleve's default index type, the one Open
// creates) keeps its root: the file whose lock is the index's single-writer
// lock. TestHoldExcludesOpen fails if bleve moves it.
func rootBolt(dir string) string { return filepath.Join(dir, "store", "root.bolt") }

// Hold takes the index's single-writer lock without opening the index: it
// keeps every Open of dir — an indexer starting — waiting, and failing with
// ErrLocked after its lock timeout, until release is called. It waits at
// most lockTimeout (zero: DefaultLockTimeout) for a holder to let go, then
// fails with ErrLocked: an indexer has the index open.
//
// A dir that holds no index (missing, empty, or without its root file) is
// first made one, as Open would make it, so that an indexer starting cannot
// create one there meanwhile. An index whose root file cannot be read fails
// with another error: nobody can hold that index, an indexer no more than
// this.
func Hold(dir string, lockTimeout time.Duration) (release func() error, err error) {
	if lockTimeout <= 0 {
		lockTimeout = DefaultLockTimeout
	}
	_, metaErr := os.Stat(filepath.Join(dir, "index_meta.json"))
	_, rootErr := os.Stat(rootBolt(dir))
	if errors.Is(metaErr, fs.ErrNotExist) || errors.Is(rootErr, fs.ErrNotExist) {
		x, err := Open(dir, lockTimeout)
		if err != nil {
			return nil, err
		}
		if err := x.Close(); err != nil {
			return nil, err
		}
	}
	// Read-write, not read-only: a read-only bolt takes a shared lock, which
	// two holders could both take.
	db, err := bolt.Open(rootBolt(dir), 0o600, &bolt.Options{Timeout: lockTimeout})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("hold index %s: %w (waited %s)", dir, ErrLocked, lockTimeout)
	}
	if err != nil {
		return nil, fmt.Errorf("hold index %s: %w", dir, err)
	}
	return db.Close, nil
}
