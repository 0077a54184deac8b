//go:build !unix

package ledger_test

import "time"

func cpuTime() (time.Duration, bool) { return 0, false }
