package bench

// SyscallSource says what the syscall figures count. Linux's per-process
// I/O accounting (/proc/<pid>/io) is the only syscall counter /proc offers
// without tracing: syscr and syscw count the read(2)- and write(2)-family
// calls (read, pread64, readv, preadv, write, pwrite64, writev, pwritev,
// sendfile, copy_file_range), on files and sockets alike. Every other
// syscall (openat, fcntl, fsync, fstat, rename, futex, epoll, nanosleep …)
// is not counted: strace -c -f gives the full census.
const SyscallSource = "read+write syscalls: syscr + syscw of /proc/[pid]/io (read, pread64, readv, write, pwrite64, writev and kin; openat, fcntl, fsync, futex and the rest not counted)"

// syscallsUnavailable is SyscallSource where /proc gives no counts.
const syscallsUnavailable = "n/a: no /proc/[pid]/io (not Linux, or a kernel without task I/O accounting)"

// SyscallCount is read- and write-class system calls of a process.
type SyscallCount struct {
	Read  int64 `json:"read"`  // syscr
	Write int64 `json:"write"` // syscw
}

// Total is read + write.
func (c SyscallCount) Total() int64 { return c.Read + c.Write }

// syscallsBetween is what a process made between two readings; nil when
// either reading failed (the process had exited, or no /proc).
func syscallsBetween(before, after *SyscallCount) *SyscallCount {
	if before == nil || after == nil {
		return nil
	}
	return &SyscallCount{Read: after.Read - before.Read, Write: after.Write - before.Write}
}
