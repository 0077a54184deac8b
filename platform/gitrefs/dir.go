package gitrefs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"sync"
)

// Dir is a git directory whose files are opened without leaving it: a path
// or a symbolic link that would lead out of it is refused, as os.Root
// refuses it. It is the fs.FS (and fs.ReadFileFS, fs.StatFS) Loose and
// Packed read. Not for use after Close.
//
// os.Root resolves a path one element at a time (an openat and a close per
// directory, then an fstat to size the read): reading a PR's two branch
// heads that way was most of the validator's CPU per request. On Linux 5.6
// and later a Dir opens each file in one openat2 with RESOLVE_BENEATH, which
// the kernel confines the same way (no "..", absolute path or link out of
// the directory, no /proc magic link); where openat2 is missing or refused
// (older kernels, seccomp filters, other systems) it uses os.Root.
type Dir struct {
	path string
	fd   int // the directory for openat2 (dir_linux.go), or -1
	// root answers where openat2 cannot: opened by OpenDir when there is
	// no fd, else on first need (an openat, an fstat and a close per Dir
	// that the usual read does without).
	mu   sync.Mutex
	root *os.Root
}

// OpenDir opens dir for reading beneath it.
func OpenDir(dir string) (*Dir, error) {
	d := &Dir{path: dir, fd: openFast(dir)}
	if d.fd < 0 {
		root, err := os.OpenRoot(dir)
		if err != nil {
			return nil, err
		}
		d.root = root
	}
	return d, nil
}

// Close releases the directory.
func (d *Dir) Close() error {
	closeFast(d.fd)
	d.fd = -1
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.root == nil {
		return nil
	}
	return d.root.Close()
}

// rootFS is the directory as os.Root reads it, opened now if need be.
func (d *Dir) rootFS() (fs.FS, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.root == nil {
		root, err := os.OpenRoot(d.path)
		if err != nil {
			return nil, err
		}
		d.root = root
	}
	return d.root.FS(), nil
}

// Open opens name, a slash path, for reading.
func (d *Dir) Open(name string) (fs.File, error) {
	if d.fd >= 0 && fs.ValidPath(name) {
		f, err := openBeneath(d.fd, name)
		if !errors.Is(err, errUnsupported) {
			return f, err
		}
	}
	fsys, err := d.rootFS()
	if err != nil {
		return nil, err
	}
	return fsys.Open(name)
}

// ReadFile returns the content of name.
func (d *Dir) ReadFile(name string) ([]byte, error) {
	if d.fd >= 0 && fs.ValidPath(name) {
		// Read with the descriptor alone: an *os.File costs an fcntl more.
		b, err := readBeneath(d.fd, name)
		if !errors.Is(err, errUnsupported) {
			return b, err
		}
	}
	f, err := d.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Sized for a loose ref: a sha or "ref: <name>", and a newline.
	b := make([]byte, 0, 64)
	for {
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		switch {
		case err == io.EOF:
			return b, nil
		case err != nil:
			return nil, err
		case len(b) == cap(b):
			b = append(b, 0)[:len(b)]
		}
	}
}

// Stat describes name.
func (d *Dir) Stat(name string) (fs.FileInfo, error) {
	f, err := d.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Stat()
}

// errUnsupported: openat2 cannot be used here; os.Root answers instead.
var errUnsupported = errors.New("openat2 unsupported")

// errEscapes is os.Root's word for a path that leads out of its directory.
var errEscapes = errors.New("path escapes from parent")
