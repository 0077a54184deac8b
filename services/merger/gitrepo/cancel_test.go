package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prsaga/prsaga/services/merger/gitrepo/gitobj"
)

// countingCtx counts the checks of its error, and cancels itself at the
// cancelAt-th (0: never): a cancel at an exact point of a merge's walk,
// without sleeping.
type countingCtx struct {
	context.Context
	cancel   context.CancelFunc
	calls    atomic.Int64
	cancelAt int64
}

func newCountingCtx(t *testing.T, cancelAt int64) *countingCtx {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return &countingCtx{Context: ctx, cancel: cancel, cancelAt: cancelAt}
}

func (c *countingCtx) Err() error {
	if n := c.calls.Add(1); n == c.cancelAt {
		c.cancel()
	}
	return c.Context.Err()
}

// buildManyFiles makes a merge of files files in a few directories, each
// changed by both sides on different lines: every one is merged line by
// line, and the merge is clean. It returns the PR head.
func buildManyFiles(f *fixture, files int) string {
	base, ours, theirs := map[string]file{}, map[string]file{}, map[string]file{}
	for i := range files {
		p := fmt.Sprintf("d%d/f%03d.txt", i%7, i)
		lines := []string{"one\n", "two\n", "three\n", "four\n", "five\n", "six\n"}
		base[p] = reg(strings.Join(lines, ""))
		o := append([]string(nil), lines...)
		o[0] = fmt.Sprintf("one, changed by the target in %d\n", i)
		ours[p] = reg(strings.Join(o, ""))
		th := append([]string(nil), lines...)
		th[5] = fmt.Sprintf("six, changed by the PR in %d\n", i)
		theirs[p] = reg(strings.Join(th, ""))
	}
	return f.build(
		commitSpec{ref: "main", files: base},
		commitSpec{ref: "feature", parents: []string{"main"}, files: theirs},
		commitSpec{ref: "main", parents: []string{"main"}, files: ours},
	)["feature"]
}

// assertUntouched fails unless the target is at its old head, with no
// lock file left and no merge journalled.
func assertUntouched(t *testing.T, f *fixture, j *memJournal, target, head string) {
	t.Helper()
	if got := f.rev(target); got != head {
		t.Errorf("%s moved to %s after a cancelled merge, want it at %s", target, got, head)
	}
	if _, err := os.Lstat(gitobj.LoosePath(f.bare, target) + ".lock"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after a cancelled merge the lock file: %v, want none", err)
	}
	if rec, _ := j.Recorded(fmt.Sprintf("%s#%d", testRepo, 42)); len(rec) != 0 {
		t.Errorf("a cancelled merge journalled %v", rec)
	}
	f.fsck()
}

func TestMergeCancelledBeforeItStarts(t *testing.T) {
	f := newFixture(t)
	feature := buildManyFiles(f, 20)
	head := f.rev("main")
	j := newMemJournal()
	req := request("feature", "main", feature, StrategyMerge, 42)
	req.Journal = j
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := f.repo.Merge(ctx, req)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Merge with a cancelled context: %v, want context.Canceled", err)
	}
	assertUntouched(t, f, j, "main", head)

	// The repository is fine for the next merge.
	res := f.merge(req)
	if want, _ := f.mergeTree(head, feature); f.rev(res.MergeSHA+"^{tree}") != want {
		t.Errorf("the merge after a cancelled one is not git's")
	}
}

// TestMergeCancelledMidway cancels a merge of many files half way through
// its checks (counted on a merge run to its end first): it stops there —
// no object written, the ref where it was, no lock — and says why.
func TestMergeCancelledMidway(t *testing.T) {
	const files = 120
	f := newFixture(t)
	feature := buildManyFiles(f, files)
	head := f.rev("main")
	req := request("feature", "main", feature, StrategyMerge, 42)

	// The whole merge, counted, on a copy of the repository.
	f.git(f.root, "clone", "-q", "--bare", f.bare, f.root+"/acme/copy.git")
	cp, err := f.repos.Open("acme/copy")
	if err != nil {
		t.Fatal(err)
	}
	full := newCountingCtx(t, 0)
	creq := req
	creq.PRID, creq.Journal = "acme/copy#42", newMemJournal()
	if _, err := cp.Merge(full, creq); err != nil {
		t.Fatal(err)
	}
	total := full.calls.Load()
	if total < files {
		t.Fatalf("a merge of %d files checked its context %d times; want at least once a file", files, total)
	}

	objects := f.git("", "count-objects")
	j := newMemJournal()
	req.Journal = j
	ctx := newCountingCtx(t, total/2)
	_, err = f.repo.Merge(ctx, req)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Merge cancelled at check %d of %d: %v, want context.Canceled", total/2, total, err)
	}
	if n := ctx.calls.Load(); n > total/2+2 {
		t.Errorf("the merge went on for %d checks after the cancel", n-total/2)
	}
	if got := f.git("", "count-objects"); got != objects {
		t.Errorf("a merge cancelled half way wrote objects: %q, before %q", got, objects)
	}
	assertUntouched(t, f, j, "main", head)
}

// TestMergeCancelledWhileTheBranchIsLocked: a merge waiting for another
// writer's lock stops when cancelled, and leaves that lock alone.
func TestMergeCancelledWhileTheBranchIsLocked(t *testing.T) {
	f := newFixture(t)
	feature := buildManyFiles(f, 3)
	head := f.rev("main")
	lock := gitobj.LoosePath(f.bare, "main") + ".lock"
	if err := os.WriteFile(lock, []byte(head+"\n"), 0o666); err != nil { // git's lock: the new value
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	waiting := make(chan struct{}, 1)
	f.repo.hooks.lockBusy = func() {
		select {
		case waiting <- struct{}{}:
		default:
		}
	}
	f.repo.retry = retryPolicy{attempts: 1000, backoff: time.Hour, maxWait: time.Hour} // only a cancel ends a wait
	done := make(chan error, 1)
	go func() {
		_, err := f.repo.Merge(ctx, request("feature", "main", feature, StrategyMerge, 42))
		done <- err
	}()
	select {
	case <-waiting:
		cancel()
	case err := <-done:
		t.Fatalf("Merge returned %v before waiting for the lock", err)
	case <-time.After(gitTimeout):
		t.Fatal("the merge never found the branch locked")
	}
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Merge cancelled while the branch is locked: %v, want context.Canceled", err)
		}
	case <-time.After(gitTimeout):
		t.Fatal("a cancelled merge kept waiting for the lock")
	}
	if b, err := os.ReadFile(lock); err != nil || string(b) != head+"\n" {
		t.Errorf("the other writer's lock: %q, %v; want it untouched", b, err)
	}
	if got := f.rev("main"); got != head {
		t.Errorf("main moved to %s", got)
	}
}
