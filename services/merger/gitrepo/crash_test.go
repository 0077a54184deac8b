package gitrepo

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prsaga/prsaga/services/merger/gitrepo/reflock"
)

var errCrash = errors.New("simulated crash")

// TestRefUpdateCrash kills the ref update at each point where a crash
// matters, and checks what a crash leaves: the branch at its old value or
// its new one — never empty, never a partial sha — and a repository git
// finds sound. A lock file left behind blocks the branch with a clear
// ErrTargetBusy until an operator removes it; then the redelivered merge
// completes, or finds itself done, without a second merge commit.
func TestRefUpdateCrash(t *testing.T) {
	for _, tc := range []struct {
		point     string
		moved     bool // the branch is at the merge after the crash
		leftLock  bool
		redoneAll bool // the retry finds the merge done
	}{
		{point: reflock.CrashLockWritten, moved: false, leftLock: true},
		{point: reflock.CrashRenamed, moved: true, leftLock: false, redoneAll: true},
	} {
		t.Run(tc.point, func(t *testing.T) {
			f := newFixture(t)
			main, feature := buildNested(f)
			lock := filepath.Join(f.bare, "refs", "heads", "main.lock")
			f.repo.hooks.refCrash = func(point string) error {
				if point == tc.point {
					return errCrash
				}
				return nil
			}
			req := request("feature", "main", feature, StrategyMerge, 42)
			if _, err := f.repo.Merge(context.Background(), req); !errors.Is(err, errCrash) {
				t.Fatalf("Merge = %v, want the simulated crash", err)
			}
			f.repo.hooks.refCrash = nil

			head := f.rev("main") // fails the test unless main resolves
			raw, err := os.ReadFile(filepath.Join(f.bare, "refs", "heads", "main"))
			if err != nil || len(strings.TrimSpace(string(raw))) != 40 {
				t.Fatalf("refs/heads/main after the crash: %q, %v; want a full sha", raw, err)
			}
			if moved := head != main; moved != tc.moved {
				t.Errorf("main = %s after a crash at %s (old %s); moved %v, want %v", head, tc.point, main, moved, tc.moved)
			}
			if moved := head != main; moved && !f.isAncestor(feature, head) {
				t.Errorf("main moved to %s, which is not the merge of the PR", head)
			}
			_, statErr := os.Stat(lock)
			if left := statErr == nil; left != tc.leftLock {
				t.Fatalf("lock file left: %v, want %v", left, tc.leftLock)
			}
			f.fsck()

			if tc.leftLock {
				// The redelivery finds the branch locked, and says what to do.
				f.repo.retry = retryPolicy{attempts: 3, backoff: time.Microsecond, maxWait: time.Microsecond}
				_, err := f.repo.Merge(context.Background(), req)
				if !errors.Is(err, ErrTargetBusy) || !strings.Contains(err.Error(), lock) || !strings.Contains(err.Error(), "remove the file") {
					t.Fatalf("Merge with a stale lock = %v; want ErrTargetBusy naming %s and what to do", err, lock)
				}
				if _, err := f.gitErr("", "", "update-ref", "refs/heads/main", feature); err == nil {
					t.Error("git itself wrote the branch despite the lock")
				}
				if err := os.Remove(lock); err != nil { // the operator's action
					t.Fatal(err)
				}
				f.repo.retry = defaultRetry
			}
			res, err := f.repo.Merge(context.Background(), req)
			if err != nil {
				t.Fatalf("Merge after the crash: %v", err)
			}
			if res.AlreadyMerged != tc.redoneAll || (tc.redoneAll && res.MergeSHA != head) {
				t.Errorf("Merge after the crash = %+v; want AlreadyMerged %v", res, tc.redoneAll)
			}
			if got := f.rev("main"); got != res.MergeSHA {
				t.Errorf("main = %s, want %s", got, res.MergeSHA)
			}
			if n := f.grepCount("main", "Prsaga-PR: acme/widgets#42"); n != 1 {
				t.Errorf("%d commits with the PR's trailer on main, want 1", n)
			}
			f.fsck()
		})
	}
}
