//go:build !unix

package gitobj

import "os"

// OpenFile is os.OpenFile where there is no unix open(2) (files_unix.go).
func OpenFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	return os.OpenFile(name, flag, perm)
}
