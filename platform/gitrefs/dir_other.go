//go:build !linux

package gitrefs

import (
	"os"
	"sync/atomic"
)

// noOpenat2 has nothing to switch off here (os.Root always answers); it
// exists for the tests' WithoutOpenat2.
var noOpenat2 atomic.Bool

func openFast(string) int { return -1 }

func closeFast(int) {}

func openBeneath(int, string) (*os.File, error) { return nil, errUnsupported }

func readBeneath(int, string) ([]byte, error) { return nil, errUnsupported }
