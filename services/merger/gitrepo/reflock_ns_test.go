package gitrepo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prsaga/prsaga/platform/racetest"
	"github.com/prsaga/prsaga/services/merger/gitrepo/reflock"
)

// Ref locks across pid namespaces: a merger in a container comes back
// after a crash in a new pid namespace (or on another node sharing the
// volume), where the dead holder's pid means nothing. The holders here are
// this test binary run again under `unshare --pid --fork --mount-proc`, so
// each sees its own /proc and is pid 1 there — as in a container.

// pidNamespace returns the command prefix running a helper in a fresh pid
// namespace (killed with its unshare), or skips the test where that is not
// permitted.
func pidNamespace(t *testing.T) []string {
	t.Helper()
	wrap := []string{"unshare", "--pid", "--fork", "--mount-proc", "--kill-child"}
	if _, err := exec.LookPath(wrap[0]); err != nil {
		t.Skip("unshare (util-linux) is not installed: the pid-namespace tests need it")
	}
	if out, err := exec.Command(wrap[0], append(wrap[1:], "true")...).CombinedOutput(); err != nil {
		t.Skipf("unshare --pid is not permitted here (%v: %s): the pid-namespace tests need root", err, strings.TrimSpace(string(out)))
	}
	return wrap
}

// waitFlockFree waits until nobody holds an exclusive flock on path: a
// killed holder's kernel clean-up is done.
func waitFlockFree(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		f, err := os.Open(path)
		if err != nil {
			t.Fatalf("the lock vanished: %v", err)
		}
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
		_ = f.Close()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the killed holder's flock on %s is still held after %v", path, waitFor)
		}
		time.Sleep(5 * time.Millisecond) // polling a condition, bounded by the deadline
	}
}

// runHelperVia runs the helper to its end (mode "merge") and returns its
// output and error.
func runHelperVia(t *testing.T, f *fixture, wrap []string, mode, merge string) (string, error) {
	t.Helper()
	cmd := helperCmd(f, wrap, mode, merge)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return "", err
	}
	timer := time.AfterFunc(waitFor, func() { _ = cmd.Process.Kill() })
	defer timer.Stop()
	err := cmd.Wait()
	return out.String(), err
}

// TestMergerKilledInAnotherPidNamespace is issue 21's scenario: a merger
// in a pid namespace is SIGKILLed while it holds refs/heads/main.lock; a
// merger started again in a fresh namespace breaks the lock and merges,
// once.
func TestMergerKilledInAnotherPidNamespace(t *testing.T) {
	wrap := pidNamespace(t)
	f := newFixture(t)
	main, feature := buildNested(f)
	lock := filepath.Join(f.bare, "refs", "heads", "main.lock")

	h := startHelperVia(t, f, wrap, reflock.CrashLockWritten, "feature,"+feature)
	rec, _ := readLockRecord(t, lock)
	if self, _ := reflock.Self(); rec.PIDNS == self.PIDNS || rec.PID != 1 {
		t.Fatalf("the holder is pid %d of %s; want pid 1 of a namespace other than ours (%s)", rec.PID, rec.PIDNS, self.PIDNS)
	}
	h.killAndReap(t)
	waitFlockFree(t, lock)
	if got := f.rev("main"); got != main {
		t.Fatalf("main moved to %s before the ref was renamed", got)
	}

	out, err := runHelperVia(t, f, wrap, "merge", "feature,"+feature)
	if err != nil {
		t.Fatalf("the merger restarted in a fresh pid namespace: %v\n%s", err, out)
	}
	sha, ok := strings.CutPrefix(strings.TrimSpace(out[strings.LastIndex(out, "merged "):]), "merged ")
	if !ok {
		t.Fatalf("the restarted merger said %q", out)
	}
	if got := f.rev("main"); got != sha || got == main {
		t.Fatalf("main = %s, the merge said %s (old %s)", got, sha, main)
	}
	if _, err := os.Stat(lock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("lock after the merge: %v; want it gone", err)
	}
	if n := f.grepCount("main", "Prsaga-PR: acme/widgets#42"); n != 1 {
		t.Errorf("%d commits with the PR's trailer, want 1", n)
	}
	if left, _ := filepath.Glob(filepath.Join(f.bare, reflock.WorkDir, "*-1-*")); len(left) > 0 {
		t.Errorf("temporary files named by pid are left: %v", left)
	}
	f.fsck()
}

// TestLiveHolderInAnotherPidNamespaceIsRespected: a lock held by a live
// merger in another pid namespace is never broken, however many mergers
// (here and in yet another namespace) try at once; once the holder is
// killed, of several breakers racing exactly one breaks it.
func TestLiveHolderInAnotherPidNamespaceIsRespected(t *testing.T) {
	wrap := pidNamespace(t)
	f := newFixture(t)
	main, feature := buildNested(f)
	lock := filepath.Join(f.bare, "refs", "heads", "main.lock")
	h := startHelperVia(t, f, wrap, "hold", "")
	_, content := readLockRecord(t, lock)

	const n = 6
	var broke, merged sync.Map
	repos := separateRepos(t, f, n)
	for _, repo := range repos {
		repo.retry = shortRetry
	}
	wait := racetest.AtOnce(repos, func(i int, repo *Repo) {
		for range 50 {
			if ok, _ := repo.locks.BreakDead(lock); ok {
				broke.Store(i, true)
			}
		}
		if _, err := repo.Merge(context.Background(), request("feature", "main", feature, StrategyMerge, 42)); !errors.Is(err, ErrTargetBusy) {
			merged.Store(i, err)
		}
	})
	out, err := runHelperVia(t, f, wrap, "merge", "feature,"+feature)
	wait()
	if err == nil || !strings.Contains(out, "target branch busy") || !strings.Contains(out, "alive") {
		t.Errorf("a merger in another namespace, while the holder lives: %v\n%s\nwant target branch busy, the holder alive", err, out)
	}
	broke.Range(func(k, _ any) bool { t.Errorf("breaker %v broke a live holder's lock", k); return true })
	merged.Range(func(k, v any) bool { t.Errorf("merger %v: %v, want ErrTargetBusy", k, v); return true })
	if b, err := os.ReadFile(lock); err != nil || string(b) != string(content) {
		t.Fatalf("the live holder's lock was touched: %q, %v", b, err)
	}
	if got := f.rev("main"); got != main {
		t.Fatalf("main moved to %s under a live lock", got)
	}

	// Killed: several breakers race; one breaks it and takes it at once.
	h.killAndReap(t)
	waitFlockFree(t, lock)
	if broken := raceToBreak(t, separateRepos(t, f, n), lock); broken != 1 {
		t.Fatalf("%d breakers broke the dead lock, want exactly 1", broken)
	}
	if b, err := os.ReadFile(lock); err != nil || string(b) == string(content) {
		t.Errorf("the lock after the break: %q, %v; want the winner's", b, err)
	}
}

// TestFlockRecordsAnywhere: a record saying its holder keeps an flock is
// judged by that flock alone, whatever boot or pid namespace it names —
// broken when the flock is gone, respected while it is held (here by
// another open file of this process, standing for a holder elsewhere).
func TestFlockRecordsAnywhere(t *testing.T) {
	self, _ := reflock.Self()
	record := func(proc string) string {
		return fmt.Sprintf("%s\nhost=elsewhere\nboot=00000000-0000-0000-0000-000000000000\npidns=pid:[1]\npid=1\nstart=1\nproc=%s\nlive=flock\nnonce=00\n", reflock.RecordMagic, proc)
	}
	for _, tc := range []struct {
		name    string
		content string
		flocked bool
		broken  bool
	}{
		{name: "flock gone", content: record("0123456789abcdef"), broken: true},
		{name: "flock held", content: record("0123456789abcdef"), flocked: true},
		{name: "proc malformed", content: record("../../etc/passwd")},
		{name: "no proc", content: strings.Replace(record("x"), "proc=x\n", "", 1)},
		{name: "this process's", content: record(self.Proc)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			main, feature := buildNested(f)
			lock := filepath.Join(f.bare, "refs", "heads", "main.lock")
			if err := os.WriteFile(lock, []byte(tc.content), 0o666); err != nil {
				t.Fatal(err)
			}
			if tc.flocked {
				lf, err := os.Open(lock)
				if err != nil {
					t.Fatal(err)
				}
				defer lf.Close()
				if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
					t.Fatal(err)
				}
			}
			f.repo.retry = shortRetry
			_, err := f.repo.Merge(context.Background(), request("feature", "main", feature, StrategyMerge, 42))
			if tc.broken {
				if err != nil {
					t.Fatalf("Merge = %v; want the dead lock broken", err)
				}
				if n := f.grepCount("main", "Prsaga-PR: acme/widgets#42"); n != 1 {
					t.Errorf("%d commits with the PR's trailer, want 1", n)
				}
				return
			}
			if !errors.Is(err, ErrTargetBusy) {
				t.Fatalf("Merge = %v, want ErrTargetBusy", err)
			}
			if b, err := os.ReadFile(lock); err != nil || string(b) != tc.content {
				t.Errorf("the lock was touched: %q, %v", b, err)
			}
			if got := f.rev("main"); got != main {
				t.Errorf("main moved to %s", got)
			}
		})
	}
}

// TestMergerThatLostItsLockDoesNotMoveTheRef: a merger in another pid
// namespace (a container, another node) holds the ref lock, has checked
// the target's old value and written the new one — and loses its flock
// there, as on NFS when it is cut off from the server for longer than the
// server's lease. A merger here judges the lock dead, breaks it and
// merges another PR. When the first merger resumes it must not move the
// ref: it fails with ErrLockLost, and main keeps the second merge (as git
// reads it).
func TestMergerThatLostItsLockDoesNotMoveTheRef(t *testing.T) {
	wrap := pidNamespace(t)
	f := newFixture(t)
	main, feature := buildNested(f)
	f.git("", "update-ref", "refs/heads/second", main)
	second := f.pushCommit("second", "second.txt")
	lock := filepath.Join(f.bare, "refs", "heads", "main.lock")

	h := startHelperVia(t, f, wrap, "lose-lock", "feature,"+feature)
	rec, _ := readLockRecord(t, lock)
	if self, _ := reflock.Self(); rec.PIDNS == self.PIDNS {
		t.Fatalf("the holder is in our pid namespace (%s); want another", rec.PIDNS)
	}
	waitFlockFree(t, lock)

	res := f.merge(request("second", "main", second, StrategyMerge, 43))
	if got := f.rev("main"); got != res.MergeSHA || got == main {
		t.Fatalf("main = %s after the second merge %s (old %s)", got, res.MergeSHA, main)
	}

	if _, err := io.WriteString(h.stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- h.cmd.Wait() }()
	var err error
	select {
	case err = <-exited:
	case <-time.After(waitFor):
		t.Fatal("the first merger never finished")
	}
	if got := f.rev("main"); got != res.MergeSHA {
		t.Fatalf("main = %s; want the second merge %s: the merger that lost its lock moved the ref", got, res.MergeSHA)
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitLockLost {
		t.Fatalf("the first merger after losing its lock: %v; want exit status %d (ErrLockLost)", err, exitLockLost)
	}
	if n := f.grepCount("main", "Prsaga-PR: acme/widgets#42"); n != 0 {
		t.Errorf("%d commits of the first merger's PR on main, want 0", n)
	}
	if _, err := os.Stat(lock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("lock after both merges: %v; want none", err)
	}
	f.fsck()
}
