//go:build unix

package durable

import (
	"os"
	"syscall"
	"testing"
)

// The new file has the permissions asked for (less the umask), not those
// of the file it replaces.
func TestWriteJSONMode(t *testing.T) {
	mask := syscall.Umask(0)
	syscall.Umask(mask)
	for _, perm := range []os.FileMode{0o600, 0o644} {
		path := existing(t, "", 0o400)
		if err := WriteJSON(path, true, perm); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if want := perm &^ os.FileMode(mask); fi.Mode().Perm() != want {
			t.Errorf("WriteJSON(%v): mode %v, want %v", perm, fi.Mode().Perm(), want)
		}
	}
}
