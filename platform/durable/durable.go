package durable

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// WriteJSON writes v as indented JSON and a newline to path, with
// permissions perm: into path+".tmp" first, synced, then renamed over
// path, and path's directory synced. A reader sees the old file or the
// whole new one, and the new one survives a crash once WriteJSON returns.
func WriteJSON(path string, v any, perm os.FileMode) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), perm); err != nil {
		return err
	}
	if err := Sync(tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return Sync(filepath.Dir(path))
}

// Sync fsyncs a file, or a directory (which makes the files created and
// renamed in it durable).
func Sync(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", path, err)
	}
	return nil
}
