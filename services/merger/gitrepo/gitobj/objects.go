package gitobj

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/objfile"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// WriteObjects stores new objects as loose objects, each written to a
// temporary file and renamed into place as git does, so that no crash of
// the process leaves a torn object. In sync mode it fsyncs them and the
// directories they were added to, so that a ref pointing at them can never
// survive a power loss that they did not. A loose object already present
// is skipped; one only in a pack is written loose too (harmless: the same
// content, which git gc prunes), which saves go-git's pack lookup.
func (r *Store) WriteObjects(objs ...plumbing.EncodedObject) error {
	dirs := map[string]bool{}
	for _, o := range objs {
		file, written, err := r.writeLoose(o)
		if err != nil {
			return fmt.Errorf("write %s %s: %w", o.Type(), o.Hash(), err)
		}
		if written && r.durable.Sync {
			dirs[filepath.Dir(file)] = true
		}
	}
	for d := range dirs {
		if err := r.durable.FsyncDir(d); err != nil {
			return err
		}
	}
	if len(dirs) > 0 { // a new objects/xx directory is an entry of objects/
		return r.durable.FsyncDir(filepath.Join(r.dir, "objects"))
	}
	return nil
}

// writeLoose writes one loose object unless it exists; it returns its
// path and whether it wrote it.
func (r *Store) writeLoose(o plumbing.EncodedObject) (string, bool, error) {
	hex := o.Hash().String()
	dir := filepath.Join(r.dir, "objects", hex[:2])
	file := filepath.Join(dir, hex[2:])
	if _, err := os.Lstat(file); err == nil {
		return file, false, nil
	}
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return "", false, err
	}
	// Created read-only, as git's loose objects are, without a chmod.
	tmp := filepath.Join(dir, "tmp_obj_"+strconv.FormatUint(rand.Uint64(), 36))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		return "", false, err
	}
	err = func() error {
		defer f.Close()
		rd, err := o.Reader()
		if err != nil {
			return err
		}
		defer rd.Close()
		w := objfile.NewWriter(f)
		if err := w.WriteHeader(o.Type(), o.Size()); err != nil {
			return err
		}
		if _, err := io.Copy(w, rd); err != nil {
			return err
		}
		if err := w.Close(); err != nil {
			return err
		}
		if w.Hash() != o.Hash() {
			return fmt.Errorf("encoded as %s", w.Hash())
		}
		if err := r.durable.FsyncOpen(f, file); err != nil {
			return err
		}
		return f.Close()
	}()
	if err == nil {
		err = os.Rename(tmp, file)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return "", false, err
	}
	return file, true, nil
}

// EncodeCommit encodes a commit object in memory.
func (r *Store) EncodeCommit(c *object.Commit) (plumbing.EncodedObject, error) {
	obj := r.st.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		return nil, fmt.Errorf("encode commit: %w", err)
	}
	return obj, nil
}
