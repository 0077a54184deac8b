package gitobj

import (
	"bytes"
	"crypto/sha1"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/klauspost/compress/zlib"
)

// WriteObjects stores new objects as loose objects, each complete before
// it gets its name, so that no crash of the process leaves a torn object:
// written to a file without a name (O_TMPFILE) and linked into place
// where the kernel and file system allow, else to a temporary file renamed
// into place, as git does. In sync mode it fsyncs them and the
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

// ErrNoUnnamed: files without a name (O_TMPFILE) are not supported here.
var ErrNoUnnamed = errors.New("unnamed temporary files not supported")

// writeLoose writes one loose object unless it exists; it returns its
// path and whether it wrote it. The fan-out directory objects/xx is not
// looked up first: it is made when the object's file cannot be created
// for its absence (new, or removed by git prune when it emptied it).
func (r *Store) writeLoose(o plumbing.EncodedObject) (string, bool, error) {
	hex := o.Hash().String()
	dir := filepath.Join(r.dir, "objects", hex[:2])
	file := filepath.Join(dir, hex[2:])
	if _, err := os.Lstat(file); err == nil {
		return file, false, nil
	}
	z, err := deflate(o)
	if err != nil {
		return "", false, err
	}
	defer z.release()
	written, err := r.placeLoose(dir, file, z.out.Bytes())
	if errors.Is(err, fs.ErrNotExist) {
		if err = mkdirFanOut(dir); err == nil {
			written, err = r.placeLoose(dir, file, z.out.Bytes())
		}
	}
	if err != nil {
		return "", false, err
	}
	return file, written, nil
}

// mkdirFanOut makes the fan-out directory objects/xx: one mkdir(2), where
// os.MkdirAll stats it and objects/ first; objects/ itself is made only
// when it is missing too.
func mkdirFanOut(dir string) error {
	err := os.Mkdir(dir, 0o777)
	switch {
	case err == nil, errors.Is(err, fs.ErrExist): // made meanwhile by another writer
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return os.MkdirAll(dir, 0o777)
	}
	return err
}

// placeLoose gives file its content, complete, unless it exists:
// fs.ErrNotExist if dir does not.
func (r *Store) placeLoose(dir, file string, content []byte) (bool, error) {
	if !r.named {
		written, err := r.linkLoose(dir, file, content)
		if !errors.Is(err, ErrNoUnnamed) {
			return written, err
		}
		r.named = true // this file system has none: never ask again
	}
	return r.renameLoose(dir, file, content)
}

// linkLoose writes content to a file without a name in dir and links it
// as file; link(2) fails if file exists, which then was written
// meanwhile by someone else, with the same content.
func (r *Store) linkLoose(dir, file string, content []byte) (bool, error) {
	// Read-only, as git's loose objects are, without a chmod.
	f, err := OpenUnnamed(dir, 0o444)
	if err != nil {
		return false, err
	}
	defer f.Close()
	if _, err := f.Write(content); err != nil {
		return false, err
	}
	if err := r.durable.FsyncOpen(f, file); err != nil {
		return false, err
	}
	err = LinkUnnamed(f, file)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	return err == nil, err
}

// renameLoose writes content to a temporary file of dir and renames it
// over file.
func (r *Store) renameLoose(dir, file string, content []byte) (bool, error) {
	tmp := filepath.Join(dir, "tmp_obj_"+strconv.FormatUint(rand.Uint64(), 36))
	f, err := OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		return false, err
	}
	_, err = f.Write(content)
	if err == nil {
		err = r.durable.FsyncOpen(f, file)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, file)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return false, err
	}
	return true, nil
}

// deflater is a loose object's compressed form being built, with the
// zlib state and buffers that are reused from object to object (a zlib
// writer alone allocates hundreds of kilobytes).
type deflater struct {
	out bytes.Buffer
	zw  *zlib.Writer
	sum hash.Hash
	hdr []byte
}

// Loose objects are compressed at zlib's best speed, as git compresses
// them unless core.looseCompression says otherwise: they are written once
// per merge and repacked, recompressed, by git gc. klauspost/compress's
// zlib, not the standard library's: at that level it compresses a W2
// root tree (50–500 entries) in about half the time or less, for a stream
// 1% larger (BenchmarkDeflateTree).
var deflaters = sync.Pool{New: func() any {
	zw, _ := zlib.NewWriterLevel(io.Discard, zlib.BestSpeed) // a valid level: never fails
	return &deflater{zw: zw, sum: sha1.New()}
}}

// maxPooledBuffer: a buffer grown by a large blob is dropped, not kept.
const maxPooledBuffer = 1 << 20

// deflate compresses o as a loose object ("<type> <size>\0" and the
// content, zlib), checking on the way that the content hashes to o's
// name and has o's size.
func deflate(o plumbing.EncodedObject) (*deflater, error) {
	z := deflaters.Get().(*deflater)
	z.out.Reset()
	z.zw.Reset(&z.out)
	z.sum.Reset()
	z.hdr = strconv.AppendInt(append(append(z.hdr[:0], o.Type().Bytes()...), ' '), o.Size(), 10)
	z.hdr = append(z.hdr, 0)
	w := io.MultiWriter(z.zw, z.sum)
	if _, err := w.Write(z.hdr); err != nil {
		z.release()
		return nil, err
	}
	rd, err := o.Reader()
	if err != nil {
		z.release()
		return nil, err
	}
	n, err := io.Copy(w, rd)
	_ = rd.Close() // an in-memory or already-read object: nothing to lose
	if err == nil {
		err = z.zw.Close()
	}
	switch {
	case err != nil:
	case n != o.Size():
		err = fmt.Errorf("content of %d bytes, size says %d", n, o.Size())
	case !z.matches(o.Hash()):
		err = fmt.Errorf("encoded as %x", z.sum.Sum(nil))
	}
	if err != nil {
		z.release()
		return nil, err
	}
	return z, nil
}

func (z *deflater) release() {
	if z.out.Cap() > maxPooledBuffer {
		return
	}
	deflaters.Put(z)
}

// EncodeCommit encodes a commit object in memory.
func (r *Store) EncodeCommit(c *object.Commit) (plumbing.EncodedObject, error) {
	obj := r.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		return nil, fmt.Errorf("encode commit: %w", err)
	}
	return obj, nil
}

// matches reports whether the content hashed is the object named h.
func (z *deflater) matches(h plumbing.Hash) bool {
	return bytes.Equal(z.sum.Sum(nil), h[:])
}
