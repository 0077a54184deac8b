package bench

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's CPU times: 100 on
// every Linux architecture Go runs on.
const clockTicks = 100

// selfUsage is this process's CPU time (user+system), peak RSS and page
// faults so far.
func selfUsage() (time.Duration, int64, int64) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0, -1
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), ru.Maxrss * 1024, ru.Minflt + ru.Majflt
}

// procCPU is a running process's CPU time and page faults so far
// (/proc/<pid>/stat); faults -1 when unreadable.
func procCPU(pid int) (time.Duration, int64) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, -1
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, -1
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state): minflt and majflt are fields 10 and 12,
	// utime and stime 14 and 15.
	if len(f) < 13 {
		return 0, -1
	}
	minflt, _ := strconv.ParseInt(f[7], 10, 64)
	majflt, _ := strconv.ParseInt(f[9], 10, 64)
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / clockTicks, minflt + majflt
}

// procPeakRSS is a running process's peak RSS (VmHWM of /proc/<pid>/status).
func procPeakRSS(pid int) int64 {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// procSyscalls reads a process's syscr and syscw from /proc/<pid>/io
// (pid "self" for this one); nil when the file or a field is missing.
func procSyscalls(pid string) *SyscallCount {
	b, err := os.ReadFile("/proc/" + pid + "/io")
	if err != nil {
		return nil
	}
	var c SyscallCount
	seen := 0
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "syscr":
			c.Read, seen = n, seen+1
		case "syscw":
			c.Write, seen = n, seen+1
		}
	}
	if seen != 2 {
		return nil
	}
	return &c
}

// selfRSS is this process's RSS now and its anonymous and file-backed
// (with shared memory) parts, from /proc/self/status.
func selfRSS() (rss, anon, file int64, ok bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, 0, 0, false
	}
	seen := 0
	for _, line := range strings.Split(string(b), "\n") {
		k, v, found := strings.Cut(line, ":")
		if !found {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "VmRSS":
			rss, seen = kb*1024, seen+1
		case "RssAnon":
			anon, seen = kb*1024, seen+1
		case "RssFile", "RssShmem":
			file, seen = file+kb*1024, seen+1
		}
	}
	return rss, anon, file, seen == 4
}

// resetPeakRSS sets a process's peak RSS (VmHWM, and so getrusage's
// maxrss) back to its current RSS (pid "self" for this one), so that a
// later reading is the peak since now; false where the kernel refuses
// (/proc/<pid>/clear_refs, Linux 4.0+, writable by the process's owner).
func resetPeakRSS(pid string) bool {
	f, err := os.OpenFile("/proc/"+pid+"/clear_refs", os.O_WRONLY, 0)
	if err != nil {
		return false
	}
	_, werr := f.WriteString("5")
	cerr := f.Close()
	return werr == nil && cerr == nil
}

// exitedUsage is an exited child's CPU time, peak RSS and page faults from
// its rusage.
func exitedUsage(ps *os.ProcessState) (time.Duration, int64, int64) {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok || ru == nil {
		return 0, 0, -1
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), ru.Maxrss * 1024, ru.Minflt + ru.Majflt
}

// dieWithParent asks the kernel to kill the child if this process dies
// without stopping it (a SIGKILL of the benchmark, a crash).
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// terminate asks a child to shut down gracefully.
func terminate(p *os.Process) error { return p.Signal(syscall.SIGTERM) }

// syncFiles writes every file system's dirty data out (sync(2)).
func syncFiles() { syscall.Sync() }
