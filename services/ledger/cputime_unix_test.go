//go:build unix

package ledger_test

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time this process has used (every thread, user and
// system): on a shared machine it varies far less than the wall clock.
func cpuTime() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
