package gitobj

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/objfile"
)

// Object returns object h, which must be of type t unless t is
// plumbing.AnyObject (plumbing.ErrObjectNotFound otherwise, as go-git
// answers): from the cache of encoded objects, else read here as a loose
// object, else from go-git's storage (packs, alternates, an incoming
// quarantine directory). go-git's own loose read costs three lstats, the
// open's poller calls and an fstat before the read, and opens the file
// before it looks in the cache; here a loose object is an open, reads and
// a close, and its content is checked against its name on the way.
func (r *Store) Object(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	o, ok := r.cache.Get(h)
	if !ok {
		var err error
		o, err = readLoose(looseObjectPath(r.dir, h), h)
		if errors.Is(err, fs.ErrNotExist) {
			return r.Storer().EncodedObject(t, h)
		}
		if err != nil {
			return nil, err
		}
		r.cache.Put(o)
	}
	if t != plumbing.AnyObject && o.Type() != t {
		return nil, plumbing.ErrObjectNotFound
	}
	return o, nil
}

func looseObjectPath(dir string, h plumbing.Hash) string {
	hex := h.String()
	return filepath.Join(dir, "objects", hex[:2], hex[2:])
}

// fileBuffers hold a loose object's file while it is inflated (the
// content is copied out): 16 KB at first, as a W2 root tree of 500 entries
// compresses to about 12 KB. A buffer grown past 1 MiB is not kept.
var fileBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// copyBuffers are io.CopyBuffer's buffers for inflated content.
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// readLoose reads and inflates the loose object file at path, which must
// hold object h: fs.ErrNotExist wrapped when there is no such file.
func readLoose(path string, h plumbing.Hash) (plumbing.EncodedObject, error) {
	fb := fileBuffers.Get().(*[]byte)
	defer func() {
		if cap(*fb) <= 1<<20 {
			fileBuffers.Put(fb)
		}
	}()
	b, err := AppendFile((*fb)[:0], path)
	if err != nil {
		return nil, err
	}
	*fb = b
	zr, err := objfile.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("loose object %s: %w", h, err)
	}
	defer zr.Close()
	t, size, err := zr.Header()
	if err != nil {
		return nil, fmt.Errorf("loose object %s: %w", h, err)
	}
	o := &plumbing.MemoryObject{}
	o.SetType(t)
	o.SetSize(size)
	buf := copyBuffers.Get().(*[]byte)
	n, err := io.CopyBuffer(o, zr, *buf)
	copyBuffers.Put(buf)
	switch {
	case err != nil:
		return nil, fmt.Errorf("loose object %s: %w", h, err)
	case n != size:
		return nil, fmt.Errorf("loose object %s: %d bytes of content, its header says %d", h, n, size)
	case zr.Hash() != h:
		return nil, fmt.Errorf("loose object %s: its content hashes to %s", h, zr.Hash())
	}
	return o, nil
}
