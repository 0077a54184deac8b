package server

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prsaga/prsaga/platform/gittest"
	"github.com/prsaga/prsaga/platform/sqlite/sqlitetest"
	"github.com/prsaga/prsaga/services/merger"
)

// TestSyncOptionReachesTheGitLayer: Options.Sync (PRSAGA_DURABILITY=sync,
// passed by the stack) makes the merger's merges fsync; without it they do
// not.
func TestSyncOptionReachesTheGitLayer(t *testing.T) {
	gittest.Need(t)
	for _, sync_ := range []bool{true, false} {
		t.Run(map[bool]string{true: "sync", false: "process"}[sync_], func(t *testing.T) {
			root := t.TempDir()
			repo := gittest.NewBare(t, root, "acme/widgets")
			bare := repo.Dir
			repo.GitInput("commit refs/heads/main\ncommitter C <c@example.com> 1735689600 +0000\ndata 2\nc\nM 100644 inline a.txt\ndata 2\na\n\n"+
				"commit refs/heads/pr\ncommitter C <c@example.com> 1735689601 +0000\ndata 2\nc\nfrom refs/heads/main\nM 100644 inline b.txt\ndata 2\nb\n\n"+
				"commit refs/heads/main\ncommitter C <c@example.com> 1735689602 +0000\ndata 2\nc\nM 100644 inline c.txt\ndata 2\nc\n\n",
				"fast-import", "--quiet")
			head := repo.Rev("pr")

			var mu sync.Mutex
			var fsynced []string
			s, err := New(Options{DB: sqlitetest.Open(t, Migrations), ReposDir: root, Sync: sync_, onFsync: func(p string) {
				mu.Lock()
				defer mu.Unlock()
				fsynced = append(fsynced, p)
			}})
			if err != nil {
				t.Fatal(err)
			}
			res, err := s.m.Git.Merge(context.Background(), merger.Plan{
				Repo: "acme/widgets", SourceBranch: "pr", TargetBranch: "main", HeadSHA: head, Strategy: "merge",
				PRID: "acme/widgets#1", PRNumber: 1, RequestedBy: "alice", When: time.Now(),
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := repo.Rev("main"); got != res.MergeSHA {
				t.Fatalf("main = %s, want the merge %s", got, res.MergeSHA)
			}
			commit := filepath.Join(bare, "objects", res.MergeSHA[:2], res.MergeSHA[2:])
			mu.Lock()
			defer mu.Unlock()
			var commitSynced, refSynced bool
			for _, p := range fsynced {
				commitSynced = commitSynced || p == commit
				refSynced = refSynced || p == filepath.Join(bare, "refs", "heads")
			}
			if sync_ && (!commitSynced || !refSynced) {
				t.Errorf("sync mode: merge commit fsynced %v, refs/heads fsynced %v; want both (%v)", commitSynced, refSynced, fsynced)
			}
			if !sync_ && len(fsynced) > 0 {
				t.Errorf("process mode fsynced %v", fsynced)
			}
		})
	}
}
