package storetest

import (
	"testing"
	"time"
)

// settleWithin bounds the wait for the step window to show what was
// committed: on YDB the window reads an ASYNC index (docs/ydb.md, design
// §5), which lags the commits by a moment; on SQLite the first read
// settles.
const settleWithin = 10 * time.Second

// settled calls read until it finds no problem or settleWithin has
// passed; the problems of the last read are the test's errors.
func settled(t *testing.T, read func() []string) {
	t.Helper()
	deadline := time.NewTimer(settleWithin)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		problems := read()
		if len(problems) == 0 {
			return
		}
		select {
		case <-deadline.C:
			for _, p := range problems {
				t.Error(p)
			}
			return
		case <-tick.C:
		}
	}
}
