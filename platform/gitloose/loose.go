package gitloose

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/objfile"
)

// Path is where git directory gitDir keeps object h loose.
func Path(gitDir string, h plumbing.Hash) string {
	hex := h.String()
	return filepath.Join(gitDir, "objects", hex[:2], hex[2:])
}

// fileBuffers hold a loose object's file while it is inflated (the
// content is copied out): 16 KB at first, as a W2 root tree of 500 entries
// compresses to about 12 KB. A buffer grown past 1 MiB is not kept.
var fileBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// copyBuffers are io.CopyBuffer's buffers for inflated content.
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// Read reads and inflates the loose object file at path (Path), which must
// hold object h: fs.ErrNotExist wrapped when there is no such file, an
// error naming h when the file is not a loose object or its content is not
// h's.
func Read(path string, h plumbing.Hash) (plumbing.EncodedObject, error) {
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
