//go:build linux || darwin

package sqlite

import "syscall"

// freeBytes is the room left for an unprivileged writer on dir's file
// system; ok is false when it cannot be told.
func freeBytes(dir string) (n int64, ok bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return int64(st.Bavail) * int64(st.Bsize), true
}
