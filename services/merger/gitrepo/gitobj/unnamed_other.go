//go:build !linux

package gitobj

import "os"

// OpenUnnamed is ErrNoUnnamed where open(2) has no O_TMPFILE.
func OpenUnnamed(dir string, perm os.FileMode) (*os.File, error) { return nil, ErrNoUnnamed }

// LinkUnnamed is never reached without OpenUnnamed.
func LinkUnnamed(f *os.File, name string) error { return ErrNoUnnamed }
