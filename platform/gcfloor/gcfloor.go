// Package gcfloor gives the Go heap a floor: the collector does not start
// before the heap has grown to the floor, however small the live heap is,
// and above it behaves as GOGC says.
//
// A service's live heap is small (tens of MB) while it allocates hundreds of
// KB per saga; with GOGC=100 alone the collector then runs many times a
// second, each cycle marking the same live heap again. A floor spends a
// bounded amount of memory (at most the floor) to run it a few times less
// often, and costs nothing once the live heap is large: there GOGC's own goal
// is above the floor. It is the memory-limit pattern of the Go GC guide
// turned around — a lower bound on the goal instead of an upper one — and so
// it has no death spiral: nothing ever makes the collector run more often
// than GOGC alone would.
package gcfloor

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// maxPercent bounds the GOGC the floor sets, so that a nearly empty heap
// (at start) does not ask for an absurd ratio.
const maxPercent = 2000

const liveMetric = "/gc/heap/live:bytes"

// Tuner holds the floor. After every collection it sets GOGC so that the
// next goal is max(floor, live×(1+base/100)).
type Tuner struct {
	floor   uint64
	base    int // the GOGC in force when the tuner started
	mu      sync.Mutex
	percent int
	stopped bool
}

// Start sets a floor of floor bytes under the heap goal and keeps it after
// every collection until Stop. A floor of 0 (or one while GOGC is off) does
// nothing. The caller decides whether an operator's GOGC or GOMEMLIMIT
// should leave the collector alone (see Wanted).
func Start(floor uint64) *Tuner {
	t := &Tuner{floor: floor}
	base := debug.SetGCPercent(100)
	debug.SetGCPercent(base)
	t.base, t.percent = base, base
	if floor == 0 || base < 0 {
		t.stopped = true
		return t
	}
	t.tune()
	t.arm()
	return t
}

// Wanted reports whether a floor should be set given the process's
// environment: not when the operator has set GOGC or GOMEMLIMIT, which say
// how they want the collector run.
func Wanted(getenv func(string) string) bool {
	return getenv("GOGC") == "" && getenv("GOMEMLIMIT") == ""
}

var process struct {
	mu sync.Mutex
	t  *Tuner
}

// Set keeps a floor of floor bytes under this process's heap goal from now
// on, unless the environment has GOGC or GOMEMLIMIT (Wanted); it reports
// whether a floor is in force. A process has one heap: a second call (a
// test starting a second stack) raises the floor if it asks for more and
// otherwise leaves it.
func Set(floor uint64, getenv func(string) string) bool {
	if floor == 0 || !Wanted(getenv) {
		return false
	}
	process.mu.Lock()
	defer process.mu.Unlock()
	if t := process.t; t != nil && !t.isStopped() {
		if floor > t.floorBytes() {
			t.setFloor(floor)
		}
		return true
	}
	process.t = Start(floor)
	return !process.t.isStopped()
}

// Floor returns the floor Set keeps under this process's heap (0: none).
func Floor() uint64 {
	process.mu.Lock()
	defer process.mu.Unlock()
	if process.t == nil || process.t.isStopped() {
		return 0
	}
	return process.t.floorBytes()
}

// Stop puts back the GOGC the tuner started with.
func (t *Tuner) Stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return
	}
	t.stopped = true
	debug.SetGCPercent(t.base)
	t.percent = t.base
}

func (t *Tuner) floorBytes() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.floor
}

func (t *Tuner) isStopped() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.stopped
}

func (t *Tuner) setFloor(floor uint64) {
	t.mu.Lock()
	t.floor = floor
	t.mu.Unlock()
	t.tune()
}

// GOGC returns the GOGC the tuner last set.
func (t *Tuner) GOGC() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.percent
}

// cycle is the object whose cleanup marks the end of a collection: it is
// unreachable from the moment it is made, so the next cycle finds it.
type cycle struct{ _ [32]byte } // neither zero-sized nor tiny: those may never be freed alone

func (t *Tuner) arm() {
	runtime.AddCleanup(&cycle{}, func(t *Tuner) {
		if t.tune() {
			t.arm()
		}
	}, t)
}

// tune sets GOGC for the next cycle from the live heap this one left; it
// reports whether the tuner is still running.
func (t *Tuner) tune() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return false
	}
	p := Percent(t.floor, liveHeap(), t.base)
	// Only a real change is worth the heap lock SetGCPercent takes.
	if p != t.percent && (p > t.percent+t.percent/20 || p < t.percent-t.percent/20 || p == t.base) {
		debug.SetGCPercent(p)
		t.percent = p
	}
	return true
}

func liveHeap() uint64 {
	s := []metrics.Sample{{Name: liveMetric}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// Percent is the GOGC that makes the goal max(floor, live×(1+base/100)),
// at most maxPercent.
func Percent(floor, live uint64, base int) int {
	if live == 0 {
		return max(base, maxPercent)
	}
	if floor <= live {
		return base
	}
	p := (floor - live) * 100 / live
	if p > maxPercent {
		return max(base, maxPercent)
	}
	return max(base, int(p))
}
