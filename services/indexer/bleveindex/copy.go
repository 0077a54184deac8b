package bleveindex

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/blevesearch/bleve/v2"
)

// CopyTo writes a consistent copy of the open index into dst, a directory
// that must not exist yet, while writes go on: bleve's online copy
// (scorch copies the segments of one index snapshot, then the metadata),
// so the copy holds every write that returned before the call and opens
// as an index of its own. The writer's lock file is not copied. An error
// leaves no dst behind.
func (x *Index) CopyTo(dst string) error {
	if _, err := os.Lstat(dst); err == nil {
		return fmt.Errorf("copy index to %s: %w", dst, fs.ErrExist)
	}
	err := x.use(func(idx bleve.Index) error {
		c, ok := idx.(bleve.IndexCopyable)
		if !ok {
			return errors.New("this index type has no online copy")
		}
		if err := os.MkdirAll(dst, 0o700); err != nil {
			return err
		}
		return c.CopyTo(bleve.FileSystemDirectory(dst))
	})
	if err != nil {
		_ = os.RemoveAll(dst)
		return fmt.Errorf("copy index to %s: %w", dst, err)
	}
	return nil
}

// WriteTar writes a consistent copy of the open index (CopyTo) as a tar
// stream to w, staged in a temporary directory beside the index (on its
// volume, which has room for an index) and removed afterwards.
func (x *Index) WriteTar(w io.Writer) error {
	stage, err := os.MkdirTemp(filepath.Dir(x.dir), ".index-copy-")
	if err != nil {
		return fmt.Errorf("stage index copy: %w", err)
	}
	defer os.RemoveAll(stage)
	dst := filepath.Join(stage, "index")
	if err := x.CopyTo(dst); err != nil {
		return err
	}
	return TarDir(w, dst)
}

// TarDir writes the regular files under dir to w as a tar stream, with
// paths relative to dir.
func TarDir(w io.Writer, dir string) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: filepath.ToSlash(rel) + "/", Mode: 0o700, ModTime: info.ModTime()})
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: filepath.ToSlash(rel), Mode: 0o600, Size: info.Size(), ModTime: info.ModTime()}); err != nil {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
	if err != nil {
		return fmt.Errorf("tar %s: %w", dir, err)
	}
	return tw.Close()
}
