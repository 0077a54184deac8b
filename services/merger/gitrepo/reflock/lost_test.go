package reflock_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/prsaga/prsaga/platform/fault"
	"github.com/prsaga/prsaga/services/merger/gitrepo/gitobj"
	"github.com/prsaga/prsaga/services/merger/gitrepo/reflock"
)

// stallAt makes l's updates stop at point until resume is closed; stalled
// is closed when one gets there.
func stallAt(l *reflock.Locker, point string) (stalled, resume chan struct{}) {
	stalled, resume = make(chan struct{}), make(chan struct{})
	l.Crash = func(p string) error {
		if p == point {
			close(stalled)
			<-resume
		}
		return nil
	}
	return stalled, resume
}

func wait(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitFor):
		t.Fatalf("%s: not within %v", what, waitFor)
	}
}

// breakByHand breaks the lock at path as BreakDead does once it judged the
// holder dead: renamed aside, then removed. (The holder here is alive in
// this very process, which BreakDead never judges dead; the pid-namespace
// tests of package gitrepo have BreakDead itself break a lock whose
// holder lost its flock.)
func breakByHand(t *testing.T, dir, lock string) {
	t.Helper()
	aside := filepath.Join(dir, reflock.WorkDir, "broken-by-test")
	if err := os.Rename(lock, aside); err != nil {
		t.Fatalf("break the lock: %v", err)
	}
	if err := os.Remove(aside); err != nil {
		t.Fatal(err)
	}
}

// TestLostLockRefusesTheUpdate: an update stalls after checking the ref's
// old value and writing its new one, holding the lock; meanwhile the lock
// is broken and another writer moves the ref. Resumed, the first update
// must not move the ref: it fails with ErrLockLost, the ref keeps the
// other writer's value (as git reads it), and a lock the other writer
// holds at that moment is left alone.
func TestLostLockRefusesTheUpdate(t *testing.T) {
	for _, tc := range []struct {
		second string
		named  bool // the first writer's lock made from a named holder file
	}{{"merger", false}, {"git", false}, {"merger-holding", false}, {"merger", true}} {
		second := tc.second
		t.Run(fmt.Sprintf("%s,named=%v", second, tc.named), func(t *testing.T) {
			dir, c := repoWithCommits(t, 3)
			lock := gitobj.LoosePath(dir, "main") + ".lock"
			first := reflock.New(dir, gitobj.Durability{})
			first.Named = tc.named
			stalled, resume := stallAt(first, reflock.CrashLockWritten)
			done := make(chan error, 1)
			go func() { done <- first.Update("main", c[0], c[1]) }()
			wait(t, stalled, "the first update stalled under its lock")

			breakByHand(t, dir, lock)
			other := reflock.New(dir, gitobj.Durability{})
			var held *reflock.Lock
			switch second {
			case "merger":
				if err := other.Update("main", c[0], c[2]); err != nil {
					t.Fatalf("the second update: %v", err)
				}
			case "git":
				git(t, dir, "", "update-ref", "refs/heads/main", c[2].String(), c[0].String())
			case "merger-holding":
				var err error
				if held, err = other.Acquire(lock); err != nil {
					t.Fatalf("the second writer takes the lock: %v", err)
				}
			}
			heldRecord, _ := os.ReadFile(lock)

			close(resume)
			var err error
			select {
			case err = <-done:
			case <-time.After(waitFor):
				t.Fatal("the first update never returned")
			}
			if !errors.Is(err, reflock.ErrLockLost) {
				t.Fatalf("the first update after its lock was broken = %v; want ErrLockLost", err)
			}
			want := c[2].String()
			if held != nil {
				want = c[0].String() // the second writer has not moved it yet
				b, rerr := os.ReadFile(lock)
				if rerr != nil || !bytes.Equal(b, heldRecord) {
					t.Fatalf("the second writer's lock after the first update gave up: %q, %v; want it untouched", b, rerr)
				}
				if err := held.Release(); err != nil {
					t.Fatal(err)
				}
			}
			if got := revParse(t, dir); got != want {
				t.Fatalf("git reads main as %s; want %s (the first update's %s must not be there)", got, want, c[1])
			}
			if _, err := os.Stat(lock); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("lock after both writers: %v; want none", err)
			}
			if left, _ := filepath.Glob(filepath.Join(dir, reflock.WorkDir, "ref-*")); len(left) > 0 {
				t.Errorf("new-value files left: %v", left)
			}
			// The first writer's next update works from the ref as it is.
			first.Crash = nil
			if err := first.Update("main", plumbing.NewHash(want), c[1]); err != nil {
				t.Errorf("the first writer's next update: %v", err)
			}
			if got := revParse(t, dir); got != c[1].String() {
				t.Errorf("main = %s after the first writer's next update, want %s", got, c[1])
			}
		})
	}
}

// TestFaultBeforeTheRename: an error injected at FaultRefChecked fails the
// update there: the ref is not moved, its lock is released and the new
// value's file removed.
func TestFaultBeforeTheRename(t *testing.T) {
	dir, c := repoWithCommits(t, 2)
	defer fault.Arm(fault.Rule{Point: reflock.FaultRefChecked, Action: fault.Error})()
	l := reflock.New(dir, gitobj.Durability{})
	if err := l.Update("main", c[0], c[1]); !errors.Is(err, fault.ErrInjected) {
		t.Fatalf("update with %s armed = %v; want the injected fault", reflock.FaultRefChecked, err)
	}
	if got := revParse(t, dir); got != c[0].String() {
		t.Errorf("main = %s, want %s (not moved)", got, c[0])
	}
	if _, err := os.Stat(gitobj.LoosePath(dir, "main") + ".lock"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("lock after the fault: %v; want it released", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, reflock.WorkDir, "ref-*")); len(left) > 0 {
		t.Errorf("new-value files left: %v", left)
	}
}
