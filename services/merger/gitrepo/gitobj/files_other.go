//go:build !unix

package gitobj

import "os"

// ReadFile is os.ReadFile where there is no unix open(2) (files_unix.go).
func ReadFile(name string, hint int) ([]byte, error) { return os.ReadFile(name) }

// OpenFile is os.OpenFile where there is no unix open(2) (files_unix.go).
func OpenFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	return os.OpenFile(name, flag, perm)
}
