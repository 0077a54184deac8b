package stack

import (
	"os"
	"testing"

	"github.com/prsaga/prsaga/platform/config"
	"github.com/prsaga/prsaga/platform/gcfloor"
)

// A stack of every service keeps the default heap floor of five services
// under its process's heap; with GOGC or GOMEMLIMIT in the environment it
// keeps none.
func TestStackKeepsTheHeapFloor(t *testing.T) {
	startTestStack(t)
	got := gcfloor.Floor()
	if !gcfloor.Wanted(os.Getenv) {
		// GOGC or GOMEMLIMIT in the environment: the collector is the
		// operator's, and the stack must leave it alone.
		if got != 0 {
			t.Errorf("heap floor %d with GOGC=%q GOMEMLIMIT=%q set, want none", got, os.Getenv("GOGC"), os.Getenv("GOMEMLIMIT"))
		}
		return
	}
	want := uint64(len(AllServices)) * config.DefaultGCHeapFloorPerService
	if got < want {
		t.Errorf("heap floor after a stack of %d services started: %d, want at least %d", len(AllServices), got, want)
	}
}
