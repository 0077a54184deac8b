package gitobj

import (
	"fmt"
	"os"
)

// Durability says what is fsynced: with Sync (PRSAGA_DURABILITY=sync,
// design §5) new objects, a ref's new value and the directories they were
// added to; without it nothing. OnFsync, if set, is called with the path
// of every file or directory fsynced, once the fsync succeeded.
type Durability struct {
	Sync    bool
	OnFsync func(path string)
}

// FsyncFile fsyncs a file in sync mode; a no-op otherwise.
func (d Durability) FsyncFile(name string) error {
	if !d.Sync {
		return nil
	}
	f, err := OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("fsync %s: %w", name, err)
	}
	defer f.Close()
	return d.FsyncOpen(f, name)
}

// FsyncOpen fsyncs an open file in sync mode; a no-op otherwise.
func (d Durability) FsyncOpen(f *os.File, name string) error {
	if !d.Sync {
		return nil
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", name, err)
	}
	if d.OnFsync != nil {
		d.OnFsync(name)
	}
	return nil
}

// FsyncDir fsyncs a directory in sync mode, so that a rename or a new file
// in it survives power loss; a no-op otherwise.
func (d Durability) FsyncDir(dir string) error {
	return d.FsyncFile(dir)
}
