package gitrepo

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// writeObjects stores new objects as loose objects and fsyncs them (and the
// directories they were added to), so that a ref pointing at them can never
// survive a crash that they did not. go-git itself writes loose objects via
// a temporary file and a rename, without fsync. Objects already present are
// skipped.
func (r *Repo) writeObjects(objs ...plumbing.EncodedObject) error {
	dirs := map[string]bool{}
	for _, o := range objs {
		if r.st.HasEncodedObject(o.Hash()) == nil {
			continue
		}
		h, err := r.st.SetEncodedObject(o)
		if err != nil {
			return fmt.Errorf("write %s %s: %w", o.Type(), o.Hash(), err)
		}
		hex := h.String()
		file := filepath.Join(r.dir, "objects", hex[:2], hex[2:])
		if err := syncFile(file); err != nil {
			return err
		}
		dirs[filepath.Dir(file)] = true
	}
	for d := range dirs {
		if err := syncDir(d); err != nil {
			return err
		}
	}
	if len(dirs) > 0 { // a new objects/xx directory is an entry of objects/
		return syncDir(filepath.Join(r.dir, "objects"))
	}
	return nil
}

func syncFile(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return fmt.Errorf("fsync %s: %w", name, err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", name, err)
	}
	return nil
}

// encodeCommit encodes a commit object in memory.
func (r *Repo) encodeCommit(c *object.Commit) (plumbing.EncodedObject, error) {
	obj := r.st.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		return nil, fmt.Errorf("encode commit: %w", err)
	}
	return obj, nil
}
