package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Races with other writers of the repository, made deterministic with the
// merge's hooks where a single interleaving is the point, and run freely
// (with -race) where the point is that nothing is ever lost.

// waitFor bounds a test's wait on a channel; the tests never sleep.
const waitFor = 30 * time.Second

// pushCommit adds a commit with a new file on top of the bare repository's
// branch, with plumbing commands (as a push would), and returns it.
func (f *fixture) pushCommit(branch, name string) string {
	f.t.Helper()
	old := f.rev("refs/heads/" + branch)
	blob, err := f.gitErr("", name+"\n", "hash-object", "-w", "--stdin")
	if err != nil {
		f.t.Fatal(err)
	}
	// The old tree plus one file at the root.
	entries := f.git("", "ls-tree", old)
	entries += fmt.Sprintf("\n100644 blob %s\t%s\n", strings.TrimSpace(blob), name)
	tree, err := f.gitErr("", entries, "mktree")
	if err != nil {
		f.t.Fatal(err)
	}
	c := f.git("", "commit-tree", strings.TrimSpace(tree), "-p", old, "-m", "pushed "+name)
	f.git("", "update-ref", "refs/heads/"+branch, c, old)
	return c
}

func TestMergeReplansAfterLostRace(t *testing.T) {
	f := newFixture(t)
	_, feature := buildNested(f)
	var pushed string
	var once sync.Once
	f.repo.hooks.beforeRefUpdate = func() {
		once.Do(func() { pushed = f.pushCommit("main", "pushed.txt") })
	}
	res := f.merge(request("feature", "main", feature, StrategyMerge, 42))

	if res.BaseSHA != pushed {
		t.Errorf("BaseSHA = %s, want the commit pushed during the merge %s", res.BaseSHA, pushed)
	}
	if got, want := f.git("", "rev-list", "--parents", "-n1", "main"), res.MergeSHA+" "+pushed+" "+feature; got != want {
		t.Errorf("main's parents: got %q, want %q", got, want)
	}
	if wantTree, _ := f.mergeTree(pushed, feature); f.rev("main^{tree}") != wantTree {
		t.Errorf("the replanned merge's tree is not git's %s", wantTree)
	}
	if f.grepCount("main", "Prsaga-PR: acme/widgets#42") != 1 {
		t.Error("want exactly one commit with the PR's trailer")
	}
	f.fsck()
}

func TestMergeFindsWorkDoneDuringLostRace(t *testing.T) {
	f := newFixture(t)
	shas := buildForked(f)
	var once sync.Once
	f.repo.hooks.beforeRefUpdate = func() {
		// Someone fast-forwards main to the PR head meanwhile.
		once.Do(func() { f.git("", "update-ref", "refs/heads/main", shas["feature"], shas["main"]) })
	}
	res := f.merge(request("feature", "main", shas["feature"], StrategySquash, 42))
	if !res.AlreadyMerged || res.MergeSHA != shas["feature"] {
		t.Errorf("Merge = %+v, want AlreadyMerged with the PR head %s", res, shas["feature"])
	}
	if got := f.rev("main"); got != shas["feature"] {
		t.Errorf("main = %s, want the PR head %s (nothing merged on top)", got, shas["feature"])
	}
}

func TestMergeWaitsForGitsRefLock(t *testing.T) {
	f := newFixture(t)
	main, feature := buildNested(f)
	lock := filepath.Join(f.bare, "refs", "heads", "main.lock")
	if err := os.WriteFile(lock, []byte("held by git\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	observed, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	f.repo.hooks.lockBusy = func() {
		once.Do(func() {
			close(observed)
			<-release
		})
	}
	type outcome struct {
		res Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := f.repo.Merge(context.Background(), request("feature", "main", feature, StrategyMerge, 42))
		done <- outcome{res, err}
	}()

	select {
	case <-observed:
	case <-time.After(waitFor):
		t.Fatal("Merge never found the lock busy")
	}
	if got := f.rev("main"); got != main {
		t.Errorf("main moved to %s while git held its lock", got)
	}
	if b, err := os.ReadFile(lock); err != nil || string(b) != "held by git\n" {
		t.Errorf("the lock held by git was touched: %q, %v", b, err)
	}
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	close(release)

	select {
	case o := <-done:
		if o.err != nil {
			t.Fatalf("Merge after the lock was released: %v", o.err)
		}
		if got := f.rev("main"); got != o.res.MergeSHA {
			t.Errorf("main = %s, want the merge %s", got, o.res.MergeSHA)
		}
	case <-time.After(waitFor):
		t.Fatal("Merge did not finish after the lock was released")
	}
	f.fsck()
}

func TestMergeGivesUpOnAStaleLock(t *testing.T) {
	f := newFixture(t)
	main, feature := buildNested(f)
	lock := filepath.Join(f.bare, "refs", "heads", "main.lock")
	if err := os.WriteFile(lock, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	f.repo.retry = retryPolicy{attempts: 3, backoff: time.Microsecond, maxWait: time.Microsecond}
	_, err := f.repo.Merge(context.Background(), request("feature", "main", feature, StrategyMerge, 42))
	if !errors.Is(err, ErrTargetBusy) {
		t.Fatalf("Merge error = %v, want ErrTargetBusy", err)
	}
	if _, err := os.Stat(lock); err != nil {
		t.Errorf("the other writer's lock is gone: %v", err)
	}
	if got := f.rev("main"); got != main {
		t.Errorf("main moved to %s", got)
	}
}

// TestConcurrentPushesAndMerges runs `git push` from a clone in a loop
// while two independent Repos (two merger processes) merge PRs into the
// same branch. Afterwards every pushed commit and every PR is in main,
// every PR exactly once, and the repository is sound.
func TestConcurrentPushesAndMerges(t *testing.T) {
	f := newFixture(t)
	base := map[string]file{"README.md": reg("readme\n")}
	specs := []commitSpec{{ref: "main", files: base}}
	const prs = 4
	for i := 1; i <= prs; i++ {
		specs = append(specs, commitSpec{ref: fmt.Sprintf("pr%d", i), parents: []string{"main"},
			files: with(base, map[string]file{fmt.Sprintf("pr%d/file.txt", i): reg(fmt.Sprintf("pr %d\n", i))})})
	}
	shas := f.build(specs...)
	work := f.clone()

	// Count plans and busy locks: more plans than merges means races lost.
	var plans, busy atomic.Int32
	f.repo.hooks = hooks{beforeRefUpdate: func() { plans.Add(1) }, lockBusy: func() { busy.Add(1) }}
	second, err := NewRepos(f.root) // another merger process
	if err != nil {
		t.Fatal(err)
	}
	repoB, err := second.Open(testRepo)
	if err != nil {
		t.Fatal(err)
	}
	repoB.hooks = f.repo.hooks

	const pushes = 6
	var pushed []string
	errs := make(chan error, 3)
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { // the pusher
		defer wg.Done()
		for i := range pushes {
			c, err := pushWithRetry(f, work, fmt.Sprintf("push-%d.txt", i))
			if err != nil {
				errs <- err
				return
			}
			pushed = append(pushed, c)
		}
	}()
	merges := func(r *Repo, strategy string, numbers ...int) {
		defer wg.Done()
		for _, n := range numbers {
			src := fmt.Sprintf("pr%d", n)
			for range 2 { // the second Merge is a redelivery
				if _, err := r.Merge(context.Background(), request(src, "main", shas[src], strategy, n)); err != nil {
					errs <- fmt.Errorf("merge %s: %w", src, err)
					return
				}
			}
		}
	}
	go merges(f.repo, StrategyMerge, 1, 2)
	go merges(repoB, StrategySquash, 3, 4)
	wg.Wait()
	close(errs)
	t.Logf("%d merges planned %d times, found the ref locked %d times", prs, plans.Load(), busy.Load())
	for err := range errs {
		t.Error(err)
	}

	for _, c := range pushed {
		if !f.isAncestor(c, "main") {
			t.Errorf("pushed commit %s is lost", c)
		}
	}
	for n := 1; n <= prs; n++ {
		if c := f.grepCount("main", fmt.Sprintf("Prsaga-PR: acme/widgets#%d", n)); c != 1 {
			t.Errorf("PR %d: %d commits with its trailer on main, want 1", n, c)
		}
	}
	if _, err := os.Stat(filepath.Join(f.bare, "refs", "heads", "main.lock")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a ref lock was left behind: %v", err)
	}
	files := f.git("", "ls-tree", "-r", "--name-only", "main")
	for _, want := range []string{"pr1/file.txt", "pr2/file.txt", "pr3/file.txt", "pr4/file.txt", "push-0.txt", "push-5.txt"} {
		if !strings.Contains(files, want) {
			t.Errorf("main lacks %s:\n%s", want, files)
		}
	}
	f.fsck()
}

// pushWithRetry commits a new file in the clone on top of the current
// main and pushes it, fetching and retrying when the push is rejected (main
// moved, or its ref was locked by a merge).
func pushWithRetry(f *fixture, work, name string) (string, error) {
	var last error
	for range 100 {
		if _, err := f.gitErr(work, "", "fetch", "-q", "origin", "main"); err != nil {
			return "", err
		}
		if _, err := f.gitErr(work, "", "reset", "-q", "--hard", "FETCH_HEAD"); err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(work, name), []byte(name+"\n"), 0o666); err != nil {
			return "", err
		}
		if _, err := f.gitErr(work, "", "add", name); err != nil {
			return "", err
		}
		if _, err := f.gitErr(work, "", "commit", "-q", "-m", "push "+name); err != nil {
			return "", err
		}
		if _, last = f.gitErr(work, "", "push", "-q", "origin", "HEAD:main"); last == nil {
			out, err := f.gitErr(work, "", "rev-parse", "HEAD")
			return strings.TrimSpace(out), err
		}
	}
	return "", fmt.Errorf("push %s never succeeded: %w", name, last)
}
