package gitrepo

import (
	"fmt"
	"os"
)

// Options of a Repos.
type Options struct {
	// Sync is PRSAGA_DURABILITY=sync (design §5): new objects, the ref's
	// new value and the directories they were added to are fsynced before
	// the ref moves, and the refs directory after, so that a merge
	// survives power loss. Without it (process) nothing is fsynced: a
	// write(2) lands in the page cache, which outlives a crash of the
	// process, and the ref still moves by an atomic rename under its lock.
	Sync bool
	// OnFsync, if set, is called with the path of every file or directory
	// fsynced, once the fsync succeeded; for tests and metrics.
	OnFsync func(path string)
	// CacheBytes bounds the objects kept across merges, all repositories
	// together (cache.go); zero is DefaultCacheBytes.
	CacheBytes int64
}

// durability is the Options' part every Repo carries.
type durability struct {
	sync    bool
	onFsync func(path string)
}

// fsyncFile fsyncs a file in sync mode; a no-op otherwise.
func (d durability) fsyncFile(name string) error {
	if !d.sync {
		return nil
	}
	f, err := os.Open(name)
	if err != nil {
		return fmt.Errorf("fsync %s: %w", name, err)
	}
	defer f.Close()
	return d.fsyncOpen(f, name)
}

// fsyncOpen fsyncs an open file in sync mode; a no-op otherwise.
func (d durability) fsyncOpen(f *os.File, name string) error {
	if !d.sync {
		return nil
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", name, err)
	}
	if d.onFsync != nil {
		d.onFsync(name)
	}
	return nil
}

// fsyncDir fsyncs a directory in sync mode, so that a rename or a new file
// in it survives power loss; a no-op otherwise.
func (d durability) fsyncDir(dir string) error {
	return d.fsyncFile(dir)
}
