package gitloose

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ReadFile reads files larger than its first buffer whole, and fails as
// os.ReadFile does on a missing file and a directory.
func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "f")
	want := strings.Repeat("x", 5000)
	if err := os.WriteFile(name, []byte(want), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadFile(name, 64); err != nil || string(got) != want {
		t.Errorf("ReadFile = %d bytes, %v; want %d bytes", len(got), err, len(want))
	}
	if _, err := ReadFile(filepath.Join(dir, "none"), 64); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile(missing) = %v, want fs.ErrNotExist", err)
	}
	_, err := ReadFile(dir, 64)
	_, oserr := os.ReadFile(dir)
	if err == nil || errors.Is(err, fs.ErrNotExist) || oserr == nil || errors.Unwrap(err).Error() != errors.Unwrap(oserr).Error() {
		t.Errorf("ReadFile(a directory) = %v; os.ReadFile says %v", err, oserr)
	}
}
