package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/gitreach"
	"github.com/prsaga/prsaga/platform/gittest"
	"github.com/prsaga/prsaga/platform/repopath"
	psqlite "github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/services/ledger"
	ledgersqlite "github.com/prsaga/prsaga/services/ledger/sqlite"
)

// reposDir is gitreach as cmd/prsaga wires it: a repository the repos dir
// does not have is ledger.ErrNoRepository.
type reposDir struct{ repos *gitreach.Repos }

func (d reposDir) Reaches(ctx context.Context, repo, branch, commit string) (bool, error) {
	ok, err := d.repos.Reaches(ctx, repo, branch, commit)
	if errors.Is(err, repopath.ErrNotFound) {
		return false, fmt.Errorf("%w: %v", ledger.ErrNoRepository, err)
	}
	return ok, err
}

// mergedRun is the events of a clean run whose merge commit is sha.
func mergedRun(t *testing.T, pr, sha string) []*event.Event {
	t.Helper()
	r := newRun(t, pr)
	return []*event.Event{r.ev, r.validated(),
		r.follow(r.ev, contracts.TypeMerged, contracts.ServiceMerger,
			contracts.Merged{Request: r.req, BaseSHA: baseSHA, MergeSHA: sha, ChangedPaths: []string{"a.go"}}),
		r.follow(r.ev, contracts.TypeNotified, contracts.ServiceNotifier,
			contracts.Notified{Request: r.req, MergeSHA: sha, Deliveries: []contracts.Delivery{{WatcherID: "w1", Status: "delivered", Attempts: 1}}}),
		r.follow(r.ev, contracts.TypeIndexed, contracts.ServiceIndexer,
			contracts.Indexed{Request: r.req, MergeSHA: sha, Documents: 2}),
	}
}

// TestVerifyFindsMergesOffTheirBranch: verify, given the repositories,
// reports a merged saga whose merge commit its target branch no longer
// reaches (the branch was moved back with git), and both once the branch
// is deleted; a saga whose merge commit is on the branch and one still
// before the merge are not, and one whose repository is not there is
// counted unchecked. Without the repositories nothing is checked.
func TestVerifyFindsMergesOffTheirBranch(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	repo := gittest.NewBare(t, root, "acme/a",
		gittest.Commit{Name: "base", Branch: "main", Message: "base", At: at, Files: map[string]string{"a": "1"}},
		gittest.Commit{Name: "pr1", Branch: "feature/x", Parents: []string{"base"}, Message: "pr1", At: at.Add(time.Minute), Files: map[string]string{"b": "1"}},
		gittest.Commit{Name: "merge1", Branch: "main", Parents: []string{"base", "pr1"}, Message: "merge 1", At: at.Add(2 * time.Minute)},
		gittest.Commit{Name: "pr2", Branch: "feature/y", Parents: []string{"base"}, Message: "pr2", At: at.Add(3 * time.Minute), Files: map[string]string{"c": "1"}},
		gittest.Commit{Name: "merge2", Branch: "main", Parents: []string{"merge1", "pr2"}, Message: "merge 2", At: at.Add(4 * time.Minute)},
	)
	f := newFixture(t)
	for _, e := range mergedRun(t, "acme/a#1", repo.SHA["merge1"]) {
		f.project(e)
	}
	for _, e := range mergedRun(t, "acme/a#2", repo.SHA["merge2"]) {
		f.project(e)
	}
	for _, e := range mergedRun(t, "acme/gone#3", repo.SHA["merge2"]) {
		f.project(e)
	}
	inFlight := newRun(t, "acme/a#4")
	f.project(inFlight.ev)
	f.project(inFlight.validated())

	verify := func(b ledger.Branches) ledger.VerifyReport {
		t.Helper()
		scratch, err := psqlite.Open(ctx, filepath.Join(t.TempDir(), "scratch.sqlite"), psqlite.Options{}, ledgersqlite.Migrations)
		if err != nil {
			t.Fatal(err)
		}
		defer scratch.Close()
		rep, err := ledger.Verify(ctx, ledgersqlite.NewTables(f.db), &ledger.Rederiver{Scratch: ledgersqlite.NewStore(scratch), Branches: b})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Agree != 4 || len(rep.Differ) != 0 {
			t.Fatalf("verify: %+v; want the 4 sagas agreeing with the log", rep)
		}
		return rep
	}
	offBranch := func(rep ledger.VerifyReport) map[string]ledger.OffBranch {
		m := map[string]ledger.OffBranch{}
		for _, o := range rep.OffBranch {
			m[o.PRID] = o
		}
		return m
	}

	repos := reposDir{gitreach.New(root)}
	rep := verify(repos)
	if rep.MergesChecked != 2 || rep.MergesUnchecked != 1 || len(rep.OffBranch) != 0 {
		t.Fatalf("verify with main at merge 2: %d checked, %d unchecked, off the branch %+v; want 2 checked, acme/gone#3 (no repository) unchecked, none off",
			rep.MergesChecked, rep.MergesUnchecked, rep.OffBranch)
	}

	// The branch moved back past merge 2, as a merger that lost its lock
	// would leave it.
	repo.Git("update-ref", "refs/heads/main", repo.SHA["merge1"], repo.SHA["merge2"])
	rep = verify(repos)
	off := offBranch(rep)
	want := ledger.OffBranch{PRID: "acme/a#2", Repo: "acme/a", Branch: "main", MergeSHA: repo.SHA["merge2"], Problem: "not reachable from the branch"}
	if rep.MergesChecked != 2 || len(off) != 1 || off["acme/a#2"] != want {
		t.Fatalf("verify with main moved back: %d checked, off the branch %+v; want only %+v", rep.MergesChecked, rep.OffBranch, want)
	}

	// A branch that is gone cannot be checked: reported, not skipped.
	repo.Git("update-ref", "-d", "refs/heads/main")
	rep = verify(repos)
	off = offBranch(rep)
	if len(off) != 2 || !strings.Contains(off["acme/a#1"].Problem, "cannot be checked") || !strings.Contains(off["acme/a#2"].Problem, "cannot be checked") {
		t.Fatalf("verify with main deleted: off the branch %+v; want acme/a#1 and acme/a#2, not checkable", rep.OffBranch)
	}

	if rep := verify(nil); rep.MergesChecked != 0 || len(rep.OffBranch) != 0 {
		t.Errorf("verify without the repositories: %d checked, %+v; want nothing checked", rep.MergesChecked, rep.OffBranch)
	}
}
