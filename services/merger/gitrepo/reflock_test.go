package gitrepo

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prsaga/prsaga/platform/racetest"
	"github.com/prsaga/prsaga/services/merger/gitrepo/gitobj"
	"github.com/prsaga/prsaga/services/merger/gitrepo/reflock"
)

// Dead ref locks: a merger killed while holding refs/heads/<b>.lock leaves
// the lock behind; the next merge breaks it when, and only when, its record
// names a dead process of this machine. The holders here are real
// processes — this test binary run again as a helper — killed with
// SIGKILL at exact points.

// Environment of the helper process (TestLockHelperProcess).
const (
	envHelperRoot  = "GITREPO_LOCK_HELPER_ROOT"  // the repos dir
	envHelperMode  = "GITREPO_LOCK_HELPER_MODE"  // "hold", or a crash point of updateRef
	envHelperMerge = "GITREPO_LOCK_HELPER_MERGE" // source,head of the merge to run
	envHelperNamed = "GITREPO_LOCK_HELPER_NAMED" // non-empty: named holder files only
)

// TestLockHelperProcess is not a test: run by startHelper in a child
// process, it takes main's lock (mode "hold") or merges until a crash
// point of updateRef, says "ready" on stdout and waits — for EOF on stdin
// (it then releases the lock and exits) or for its SIGKILL.
func TestLockHelperProcess(t *testing.T) {
	root := os.Getenv(envHelperRoot)
	if root == "" {
		t.Skip("helper process only")
	}
	fail := func(err error) {
		fmt.Println("error:", err)
		os.Exit(2)
	}
	repos, err := NewRepos(root)
	if err != nil {
		fail(err)
	}
	repo, err := repos.Open(testRepo)
	if err != nil {
		fail(err)
	}
	repo.locks.Named = os.Getenv(envHelperNamed) != ""
	mode := os.Getenv(envHelperMode)
	source, head, _ := strings.Cut(os.Getenv(envHelperMerge), ",")
	if mode == "merge" {
		res, err := repo.Merge(context.Background(), request(source, "main", head, StrategyMerge, 42))
		if err != nil {
			fail(err)
		}
		fmt.Println("merged", res.MergeSHA)
		os.Exit(0)
	}
	if mode == "hold" {
		lock, err := repo.locks.Acquire(gitobj.LoosePath(repo.dir, "main") + ".lock")
		if err != nil {
			fail(err)
		}
		fmt.Println("ready")
		_, _ = io.Copy(io.Discard, os.Stdin)
		if err := lock.Release(); err != nil {
			fail(err)
		}
		os.Exit(0)
	}
	if mode == "lose-lock" {
		loseLockThenMerge(repo, request(source, "main", head, StrategyMerge, 42))
	}
	repo.hooks.refCrash = func(point string) error {
		if point == mode {
			fmt.Println("ready")
			_, _ = io.Copy(io.Discard, os.Stdin) // the parent kills us here
			os.Exit(3)
		}
		return nil
	}
	if _, err := repo.Merge(context.Background(), request(source, "main", head, StrategyMerge, 42)); err != nil {
		fail(err)
	}
	fail(errors.New("merge finished without reaching " + mode))
}

// exitLockLost is the helper's exit status when its merge failed with
// ErrLockLost (mode "lose-lock").
const exitLockLost = 4

// loseLockThenMerge is the helper's mode "lose-lock": it merges until the
// ref update has checked the old value and written the new one, holding
// the lock; there it loses the lock's flock — as a merger on NFS does when
// it is cut off from the server for longer than the server's lease, and
// the server drops its locks —, says "ready" and waits for a line on
// stdin, then goes on. It exits 0 when the merge moved the ref,
// exitLockLost when it refused to.
func loseLockThenMerge(repo *Repo, req MergeRequest) {
	repo.hooks.refCrash = func(point string) error {
		if point != reflock.CrashLockWritten {
			return nil
		}
		if err := dropFlocks(gitobj.LoosePath(repo.dir, "main") + ".lock"); err != nil {
			fmt.Println("error:", err)
			os.Exit(2)
		}
		fmt.Println("ready")
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		return nil
	}
	_, err := repo.Merge(context.Background(), req)
	switch {
	case errors.Is(err, ErrLockLost):
		os.Exit(exitLockLost)
	case err != nil:
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(2)
	}
	os.Exit(0)
}

// dropFlocks releases every flock this process holds on path's file,
// through each of its descriptors of that file.
func dropFlocks(path string) error {
	var want syscall.Stat_t
	if err := syscall.Stat(path, &want); err != nil {
		return err
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return err
	}
	dropped := 0
	for _, e := range fds {
		fd, err := strconv.Atoi(e.Name())
		var st syscall.Stat_t
		if err != nil || syscall.Fstat(fd, &st) != nil || st.Dev != want.Dev || st.Ino != want.Ino {
			continue
		}
		if err := syscall.Flock(fd, syscall.LOCK_UN); err != nil {
			return err
		}
		dropped++
	}
	if dropped == 0 {
		return fmt.Errorf("no descriptor of %s open", path)
	}
	return nil
}

// helper is a running helper process.
type helper struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// startHelper runs the helper in mode and waits until it is ready.
func startHelper(t *testing.T, f *fixture, mode, merge string) *helper {
	t.Helper()
	return startHelperVia(t, f, nil, mode, merge)
}

// helperCmd is the helper's command, run through wrap (e.g. unshare).
func helperCmd(f *fixture, wrap []string, mode, merge string) *exec.Cmd {
	args := append(append([]string{}, wrap...), os.Args[0], "-test.run=^TestLockHelperProcess$", "-test.count=1")
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), envHelperRoot+"="+f.root, envHelperMode+"="+mode, envHelperMerge+"="+merge)
	return cmd
}

// startHelperVia runs the helper in mode through wrap and waits until it
// is ready.
func startHelperVia(t *testing.T, f *fixture, wrap []string, mode, merge string) *helper {
	t.Helper()
	cmd := helperCmd(f, wrap, mode, merge)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &helper{cmd: cmd, stdin: stdin}
	t.Cleanup(func() { h.kill(); _ = cmd.Wait() })
	ready := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		ready <- strings.TrimSpace(line)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case line := <-ready:
		if line != "ready" {
			t.Fatalf("helper (%s): %q", mode, line)
		}
	case <-time.After(waitFor):
		t.Fatalf("helper (%s) never got ready", mode)
	}
	return h
}

func (h *helper) kill() { _ = h.cmd.Process.Signal(syscall.SIGKILL) }

// killAndReap SIGKILLs the helper and waits for it.
func (h *helper) killAndReap(t *testing.T) {
	t.Helper()
	h.kill()
	if err := h.cmd.Wait(); err == nil {
		t.Fatal("the helper exited cleanly; want it killed")
	}
}

func readLockRecord(t *testing.T, lock string) (reflock.Holder, []byte) {
	t.Helper()
	b, err := os.ReadFile(lock)
	if err != nil {
		t.Fatalf("read the lock: %v", err)
	}
	h, ok := reflock.ParseRecord(b)
	if !ok {
		t.Fatalf("the lock holds no holder record: %q", b)
	}
	return h, b
}

var shortRetry = retryPolicy{attempts: 3, backoff: time.Millisecond, maxWait: time.Millisecond}

func TestLockOfLiveProcessIsRespectedAndOfKilledOneBroken(t *testing.T) {
	for _, reap := range []bool{true, false} {
		t.Run(fmt.Sprintf("reaped=%v", reap), func(t *testing.T) {
			f := newFixture(t)
			main, feature := buildNested(f)
			lock := filepath.Join(f.bare, "refs", "heads", "main.lock")
			h := startHelper(t, f, "hold", "")
			rec, content := readLockRecord(t, lock)
			if rec.PID != h.cmd.Process.Pid {
				t.Fatalf("the lock names pid %d, the holder is %d", rec.PID, h.cmd.Process.Pid)
			}

			// Alive: the lock is respected, and the error says who holds it.
			f.repo.retry = shortRetry
			req := request("feature", "main", feature, StrategyMerge, 42)
			_, err := f.repo.Merge(context.Background(), req)
			if !errors.Is(err, ErrTargetBusy) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", rec.PID)) || !strings.Contains(err.Error(), "alive") {
				t.Fatalf("Merge while a live process holds the lock = %v; want ErrTargetBusy naming it alive", err)
			}
			if b, err := os.ReadFile(lock); err != nil || string(b) != string(content) {
				t.Fatalf("the live holder's lock was touched: %q, %v", b, err)
			}
			if got := f.rev("main"); got != main {
				t.Fatalf("main moved to %s under a live lock", got)
			}

			// Killed: the next merge breaks the lock (a killed process not
			// yet reaped is a zombie, dead too; the retries cover the
			// moment SIGKILL takes to land).
			if reap {
				h.killAndReap(t)
			} else {
				h.kill()
			}
			f.repo.retry = defaultRetry
			res := f.merge(req)
			if got := f.rev("main"); got != res.MergeSHA || res.AlreadyMerged {
				t.Fatalf("main = %s after the merge %+v", got, res)
			}
			if _, err := os.Stat(lock); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("lock after the merge: %v; want it gone", err)
			}
			if n := f.grepCount("main", "Prsaga-PR: acme/widgets#42"); n != 1 {
				t.Errorf("%d commits with the PR's trailer, want 1", n)
			}
			f.fsck()
		})
	}
}

// TestMergerKilledAtEachPointOfTheRefUpdate kills a merging process at
// each point of the ref update; the redelivered merge, in this process,
// breaks what lock was left and completes, or finds the merge done.
func TestMergerKilledAtEachPointOfTheRefUpdate(t *testing.T) {
	for _, tc := range []struct {
		point    string
		leftLock bool
		moved    bool
	}{
		{point: reflock.CrashLockWritten, leftLock: true, moved: false},
		{point: reflock.CrashRefMoved, leftLock: true, moved: true},
		{point: reflock.CrashRenamed, leftLock: false, moved: true},
	} {
		t.Run(tc.point, func(t *testing.T) {
			f := newFixture(t)
			main, feature := buildNested(f)
			lock := filepath.Join(f.bare, "refs", "heads", "main.lock")
			h := startHelper(t, f, tc.point, "feature,"+feature)
			var dead reflock.Holder
			if tc.leftLock {
				dead, _ = readLockRecord(t, lock)
			}
			h.killAndReap(t)

			_, statErr := os.Stat(lock)
			if left := statErr == nil; left != tc.leftLock {
				t.Fatalf("lock left: %v, want %v", left, tc.leftLock)
			}
			if moved := f.rev("main") != main; moved != tc.moved {
				t.Fatalf("main moved: %v, want %v", moved, tc.moved)
			}
			res := f.merge(request("feature", "main", feature, StrategyMerge, 42))
			if res.AlreadyMerged != tc.moved {
				t.Errorf("redelivery: %+v; want AlreadyMerged %v", res, tc.moved)
			}
			if got := f.rev("main"); got != res.MergeSHA {
				t.Errorf("main = %s, want %s", got, res.MergeSHA)
			}
			if _, err := os.Stat(lock); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("lock after the redelivery: %v; want it gone", err)
			}
			if n := f.grepCount("main", "Prsaga-PR: acme/widgets#42"); n != 1 {
				t.Errorf("%d commits with the PR's trailer, want 1", n)
			}
			// What the dead merger left in the work directory is gone too.
			if left, _ := filepath.Glob(filepath.Join(f.bare, reflock.WorkDir, "*-"+dead.Proc+"-*")); tc.leftLock && len(left) > 0 {
				t.Errorf("the dead merger's temporary files are left: %v", left)
			}
			f.fsck()
		})
	}
}

// TestLocksNotOursAreRespected: a lock without a record (git's, holding the
// new value, or empty), or with the record of a process this one cannot
// judge (another boot, another pid namespace), is never broken — even when
// its pid does not exist here.
func TestLocksNotOursAreRespected(t *testing.T) {
	self, ok := reflock.Self()
	if !ok {
		t.Skip("no /proc: this process cannot judge holders")
	}
	deadPid := 1 << 22 // above pid_max's default ceiling: no such process
	record := func(boot, pidns string, pid int) string {
		return fmt.Sprintf("%s\nhost=elsewhere\nboot=%s\npidns=%s\npid=%d\nstart=1\nnonce=00\n", reflock.RecordMagic, boot, pidns, pid)
	}
	for name, content := range map[string]string{
		"git's lock":       strings.Repeat("a", 40) + "\n",
		"empty":            "",
		"another boot":     record("00000000-0000-0000-0000-000000000000", self.PIDNS, deadPid),
		"another pid ns":   record(self.Boot, "pid:[1]", deadPid),
		"malformed record": reflock.RecordMagic + "\nboot=" + self.Boot + "\npidns=" + self.PIDNS + "\npid=x\nstart=1\n",
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			main, feature := buildNested(f)
			lock := filepath.Join(f.bare, "refs", "heads", "main.lock")
			if err := os.WriteFile(lock, []byte(content), 0o666); err != nil {
				t.Fatal(err)
			}
			f.repo.retry = shortRetry
			if _, err := f.repo.Merge(context.Background(), request("feature", "main", feature, StrategyMerge, 42)); !errors.Is(err, ErrTargetBusy) {
				t.Fatalf("Merge = %v, want ErrTargetBusy", err)
			}
			if b, err := os.ReadFile(lock); err != nil || string(b) != content {
				t.Errorf("the lock was touched: %q, %v", b, err)
			}
			if got := f.rev("main"); got != main {
				t.Errorf("main moved to %s", got)
			}
		})
	}
	// The same record with this machine's boot and pid namespace is judged
	// — the control showing the cases above are refused for their reason.
	t.Run("ours, dead", func(t *testing.T) {
		f := newFixture(t)
		_, feature := buildNested(f)
		lock := filepath.Join(f.bare, "refs", "heads", "main.lock")
		if err := os.WriteFile(lock, []byte(record(self.Boot, self.PIDNS, deadPid)), 0o666); err != nil {
			t.Fatal(err)
		}
		f.merge(request("feature", "main", feature, StrategyMerge, 42))
	})
}

// TestMergersRaceToBreakADeadLock: several mergers (each its own Repos, as
// separate processes would be) find the same dead lock and merge their PRs
// at once: every merge lands exactly once, nothing is lost.
func TestMergersRaceToBreakADeadLock(t *testing.T) {
	f := newFixture(t)
	buildNested(f)
	const n = 6
	heads := make([]string, n)
	for i := range heads {
		branch := fmt.Sprintf("pr%d", i)
		f.git("", "update-ref", "refs/heads/"+branch, f.rev("main"))
		heads[i] = f.pushCommit(branch, fmt.Sprintf("race%d.txt", i))
	}
	startHelper(t, f, "hold", "").killAndReap(t)

	errs := make([]error, n)
	racetest.AtOnce(separateRepos(t, f, n), func(i int, repo *Repo) {
		_, errs[i] = repo.Merge(context.Background(), request(fmt.Sprintf("pr%d", i), "main", heads[i], StrategyMerge, 100+i))
	})()
	for i, err := range errs {
		if err != nil {
			t.Errorf("merge of pr%d: %v", i, err)
		}
		if c := f.grepCount("main", fmt.Sprintf("Prsaga-PR: acme/widgets#%d", 100+i)); c != 1 {
			t.Errorf("%d commits with pr%d's trailer on main, want 1", c, i)
		}
	}
	f.fsck()
}

// TestBreakDeadLockOnce: of several breakers of the same dead lock, exactly
// one breaks it; a lock taken after the break is not broken by the others.
func TestBreakDeadLockOnce(t *testing.T) {
	f := newFixture(t)
	buildNested(f)
	lock := filepath.Join(f.bare, "refs", "heads", "main.lock")
	startHelper(t, f, "hold", "").killAndReap(t)

	broken, taken := raceToBreak(t, separateRepos(t, f, 8), lock), 0
	if _, err := os.Stat(lock); err == nil {
		taken = 1
	}
	if broken != 1 || taken != 1 {
		t.Fatalf("%d breakers broke the lock and %d lock is held; want exactly one of each", broken, taken)
	}
	h, _ := readLockRecord(t, lock)
	if self, _ := reflock.Self(); h.PID != self.PID {
		t.Errorf("the lock is held by pid %d, want this process", h.PID)
	}
}

// TestDeadHoldersFilesAreRemoved: the holder file a merger killed while
// taking a lock leaves in the work directory (with its other temporary
// files) is removed when another merger first locks there. Only a named
// holder file (a file system without O_TMPFILE) can be left: the helper
// is made to use one.
func TestDeadHoldersFilesAreRemoved(t *testing.T) {
	t.Setenv(envHelperNamed, "1")
	f := newFixture(t)
	_, feature := buildNested(f)
	lock := filepath.Join(f.bare, "refs", "heads", "main.lock")
	rec := killBeforeLink(t, f, feature, "holder-*")
	if !rec.Live {
		t.Fatalf("the holder file's record claims no flock: %+v", rec)
	}
	f.merge(request("feature", "main", feature, StrategyMerge, 42))
	if left, _ := filepath.Glob(filepath.Join(f.bare, reflock.WorkDir, "*-"+rec.Proc+"-*")); len(left) != 0 {
		t.Errorf("the killed holder's files are left: %v", left)
	}
	if _, err := os.Stat(lock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("lock after the merge: %v; want it gone", err)
	}
}

// killBeforeLink runs a merger of feature into main that stops once it
// has written its holder record, before linking it as the lock: its one
// file in the work directory matching pattern is read, the merger killed,
// and no lock may be left. It returns the dead holder's record.
func killBeforeLink(t *testing.T, f *fixture, feature, pattern string) reflock.Holder {
	t.Helper()
	h := startHelper(t, f, reflock.CrashHolderWritten, "feature,"+feature)
	left, _ := filepath.Glob(filepath.Join(f.bare, reflock.WorkDir, pattern))
	if len(left) != 1 {
		t.Fatalf("the holder's files matching %q: %v, want its holder file alone", pattern, left)
	}
	rec, _ := readLockRecord(t, left[0])
	h.killAndReap(t)
	if _, err := os.Stat(filepath.Join(f.bare, "refs", "heads", "main.lock")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("lock after a crash before linking it: %v; want none", err)
	}
	return rec
}

// separateRepos opens the fixture's repository n times, each through its
// own Repos, as n merger processes would.
func separateRepos(t *testing.T, f *fixture, n int) []*Repo {
	t.Helper()
	out := make([]*Repo, n)
	for i := range out {
		repos, err := NewRepos(f.root)
		if err != nil {
			t.Fatal(err)
		}
		if out[i], err = repos.Open(testRepo); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// raceToBreak has every repository try, at once, to break the dead lock;
// whoever breaks it takes the lock at once, and keeps it. It returns how
// many broke it.
func raceToBreak(t *testing.T, repos []*Repo, lock string) int {
	t.Helper()
	var broken atomic.Int32
	racetest.AtOnce(repos, func(_ int, repo *Repo) {
		ok, err := repo.locks.BreakDead(lock)
		if err != nil && !errors.Is(err, reflock.ErrLockRaced) {
			t.Error(err)
		}
		if ok {
			if _, err := repo.locks.Acquire(lock); err != nil {
				t.Error(err)
			}
			broken.Add(1)
		}
	})()
	return int(broken.Load())
}

// TestHolderKilledBeforeLinkLeavesNoLock: a merger killed after writing
// its holder record but before linking it as the lock leaves no lock, and
// its holder file (kept for its next locks, kept.go) is removed by the next
// merger to lock there, which takes the lock at once.
func TestHolderKilledBeforeLinkLeavesNoLock(t *testing.T) {
	f := newFixture(t)
	main, feature := buildNested(f)
	dead := killBeforeLink(t, f, feature, "*")
	if got := f.rev("main"); got != main {
		t.Fatalf("main moved to %s", got)
	}
	res := f.merge(request("feature", "main", feature, StrategyMerge, 42))
	if got := f.rev("main"); got != res.MergeSHA || res.AlreadyMerged {
		t.Errorf("main = %s after the merge %+v", got, res)
	}
	if left, _ := filepath.Glob(filepath.Join(f.bare, reflock.WorkDir, "*-"+dead.Proc+"-*")); len(left) != 0 {
		t.Errorf("the killed holder's files are left: %v", left)
	}
	f.fsck()
}

// TestKeptHolderFileIsTheLock: a merger links one holder file of its own,
// written once, as each lock it takes (no file created per lock); the lock
// is that file while held, and a live holder's kept file is never swept.
func TestKeptHolderFileIsTheLock(t *testing.T) {
	f := newFixture(t)
	buildNested(f)
	lock := filepath.Join(f.bare, "refs", "heads", "main.lock")
	h := startHelper(t, f, "hold", "")
	rec, _ := readLockRecord(t, lock)
	kept, _ := filepath.Glob(filepath.Join(f.bare, reflock.WorkDir, "keep-"+rec.Proc+"-*"))
	if len(kept) != 1 {
		t.Fatalf("the holder's kept files: %v, want one", kept)
	}
	a, errA := os.Stat(lock)
	b, errB := os.Stat(kept[0])
	if errA != nil || errB != nil || !os.SameFile(a, b) {
		t.Fatalf("the lock is not the holder's kept file (%v, %v)", errA, errB)
	}
	// Another merger's sweep (its first lock there) leaves a live holder's
	// kept file alone; the branch is busy, the lock untouched.
	other := separateRepos(t, f, 1)[0]
	other.retry = shortRetry
	feature := branchWithFile(f, "feature2", "k.txt")
	if _, err := other.Merge(context.Background(), request("feature2", "main", feature, StrategyMerge, 7)); !errors.Is(err, ErrTargetBusy) {
		t.Fatalf("Merge under a live lock = %v, want ErrTargetBusy", err)
	}
	if _, err := os.Stat(kept[0]); err != nil {
		t.Fatalf("a live holder's kept file was swept: %v", err)
	}
	_ = h.stdin.Close() // the helper releases the lock and exits
	if err := h.cmd.Wait(); err != nil {
		t.Fatalf("helper: %v", err)
	}
	if _, err := os.Stat(lock); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("lock after its release: %v", err)
	}

	// In this process: merges in a row use one kept file, written by the
	// first.
	self, _ := reflock.Self()
	var after []string
	for i := range 3 {
		head := branchWithFile(f, fmt.Sprintf("row%d", i), fmt.Sprintf("row%d.txt", i))
		f.merge(request(fmt.Sprintf("row%d", i), "main", head, StrategyMerge, 50+i))
		mine, _ := filepath.Glob(filepath.Join(f.bare, reflock.WorkDir, "keep-"+self.Proc+"-*"))
		if i > 0 && fmt.Sprint(mine) != fmt.Sprint(after) {
			t.Errorf("kept files of this process after merge %d: %v, after the first %v; want no new one", i+1, mine, after)
		}
		after = mine
	}
	f.fsck()
}

// TestKeptHolderFileGoneOrBusy: a kept holder file removed between two
// locks (a sweeper of another pid namespace, an operator) is written
// again; one whose flock is held by someone judging it (a breaker) is not
// linked as the lock — a fresh holder file is — so that what the breaker
// judged free never becomes a live lock under it.
func TestKeptHolderFileGoneOrBusy(t *testing.T) {
	f := newFixture(t)
	buildNested(f)
	self, _ := reflock.Self()
	keptFiles := func() []string {
		m, _ := filepath.Glob(filepath.Join(f.bare, reflock.WorkDir, "keep-"+self.Proc+"-*"))
		return m
	}
	f.merge(request("g1", "main", branchWithFile(f, "g1", "g1.txt"), StrategyMerge, 1))
	first := keptFiles()
	if len(first) != 1 {
		t.Fatalf("kept files: %v, want one", first)
	}
	if err := os.Remove(first[0]); err != nil {
		t.Fatal(err)
	}
	f.merge(request("g2", "main", branchWithFile(f, "g2", "g2.txt"), StrategyMerge, 2))
	second := keptFiles()
	if len(second) != 1 || second[0] == first[0] {
		t.Fatalf("kept files after the first was removed: %v (first %s), want a new one", second, first[0])
	}

	judge, err := os.Open(second[0])
	if err != nil {
		t.Fatal(err)
	}
	defer judge.Close()
	if err := syscall.Flock(int(judge.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(f.bare, "refs", "heads", "main.lock")
	var linkedKept bool
	f.repo.hooks.refCrash = func(point string) error {
		if point == reflock.CrashLockWritten {
			a, errA := os.Stat(lock)
			b, errB := judge.Stat()
			linkedKept = errA == nil && errB == nil && os.SameFile(a, b)
		}
		return nil
	}
	res := f.merge(request("g3", "main", branchWithFile(f, "g3", "g3.txt"), StrategyMerge, 3))
	f.repo.hooks.refCrash = nil
	if linkedKept {
		t.Error("the kept file was linked as the lock while another held a shared flock on it")
	}
	if got := f.rev("main"); got != res.MergeSHA {
		t.Errorf("main = %s, want %s", got, res.MergeSHA)
	}
	f.fsck()
}

// branchWithFile makes branch at main's head plus one commit adding name.
func branchWithFile(f *fixture, branch, name string) string {
	f.git("", "update-ref", "refs/heads/"+branch, f.rev("main"))
	return f.pushCommit(branch, name)
}
