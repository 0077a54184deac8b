//go:build !unix

package gitloose

import "os"

// ReadFile is os.ReadFile where there is no unix open(2) (files_unix.go).
func ReadFile(name string, hint int) ([]byte, error) { return os.ReadFile(name) }

// AppendFile is ReadFile appending to b (files_unix.go).
func AppendFile(b []byte, name string) ([]byte, error) {
	c, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	return append(b, c...), nil
}
