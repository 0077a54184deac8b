package stack

import (
	"os"
	"testing"

	"github.com/prsaga/prsaga/platform/config"
	"github.com/prsaga/prsaga/platform/gcfloor"
)

// A stack of every service keeps the default heap floor of five services
// under its process's heap (unless the environment sets GOGC or GOMEMLIMIT).
func TestStackKeepsTheHeapFloor(t *testing.T) {
	if !gcfloor.Wanted(os.Getenv) {
		t.Skip("GOGC or GOMEMLIMIT is set: the collector is the operator's")
	}
	startTestStack(t)
	want := uint64(len(AllServices)) * config.DefaultGCHeapFloorPerService
	if got := gcfloor.Floor(); got < want {
		t.Errorf("heap floor after a stack of %d services started: %d, want at least %d", len(AllServices), got, want)
	}
}
