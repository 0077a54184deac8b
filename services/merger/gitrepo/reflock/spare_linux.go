package reflock

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// reuse overwrites spare with content if nobody else holds it open (see
// spare.go); errNoLeases where leases are refused for every file.
func reuse(spare string, content []byte) error {
	fd, err := unix.Open(spare, unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 1 || st.Size != int64(len(content)) {
		return errors.New("spare unfit")
	}
	// Granted only if no other descriptor of the file is open anywhere on
	// this kernel; given up at once (a reader opening the file meanwhile
	// would wait for us, and nobody can: it has no name but ours).
	switch _, err := unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_WRLCK); {
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS):
		return errNoLeases
	case err != nil:
		return err // EAGAIN: held open by a reader; EACCES: not ours
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_UNLCK); err != nil {
		return err
	}
	for {
		n, err := unix.Pwrite(fd, content, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err == nil && n != len(content) {
			err = fmt.Errorf("short write (%d of %d bytes)", n, len(content))
		}
		if err != nil {
			return &os.PathError{Op: "write", Path: spare, Err: err}
		}
		return nil
	}
}

// exchange swaps the names file and ref atomically; errNoExchange where
// the kernel or the file system cannot.
func exchange(file, ref string) error {
	err := unix.Renameat2(unix.AT_FDCWD, file, unix.AT_FDCWD, ref, unix.RENAME_EXCHANGE)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EOPNOTSUPP):
		return errNoExchange
	}
	return &os.LinkError{Op: "exchange", Old: file, New: ref, Err: err}
}

// localFS reports whether dir is on a file system whose every reader a
// lease sees: a local one, not a network or FUSE one shared by nodes.
func localFS(dir string) bool {
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		return false
	}
	switch uint32(fs.Type) {
	case unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC,
		unix.TMPFS_MAGIC, unix.F2FS_SUPER_MAGIC, 0x2fc12fc1 /* ZFS */ :
		return true
	}
	return false
}
