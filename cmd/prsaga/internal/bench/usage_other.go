//go:build !linux

package bench

import (
	"os"
	"os/exec"
	"time"
)

// On systems without /proc the benchmark reports no CPU, RSS, syscall or
// page fault figures.

func selfUsage() (time.Duration, int64, int64)                      { return 0, 0, -1 }
func procCPU(pid int) (time.Duration, int64)                        { return 0, -1 }
func procPeakRSS(pid int) int64                                     { return 0 }
func procSyscalls(pid string) *SyscallCount                         { return nil }
func selfRSS() (rss, anon, file int64, ok bool)                     { return 0, 0, 0, false }
func resetPeakRSS(pid string) bool                                  { return false }
func exitedUsage(ps *os.ProcessState) (time.Duration, int64, int64) { return 0, 0, -1 }
func dieWithParent(cmd *exec.Cmd)                                   {}
func terminate(p *os.Process) error                                 { return p.Signal(os.Interrupt) }

func syncFiles() {}
