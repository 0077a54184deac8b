package rebuild

import "golang.org/x/sys/unix"

// exchange swaps the names a and b in one atomic step.
func exchange(a, b string) error {
	return unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
}
