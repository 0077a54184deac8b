package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/gittest"
	"github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/platform/step"
	"github.com/prsaga/prsaga/services/ledger"
	ledgersqlite "github.com/prsaga/prsaga/services/ledger/sqlite"
)

// prsaga ledger verify checks every merged saga's merge commit against its
// target branch in the repos dir: with both merges on main, exit 0; with
// main moved back past one (as a merger that lost its ref lock could
// leave it), exit 1 naming that saga and its commit, and not the other —
// in JSON and in the human format, with or without --repair (which cannot
// fix it).
func TestLedgerVerifyMergeOffItsBranch(t *testing.T) {
	cfg := testConfig(t)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	repo := gittest.NewBare(t, cfg.ReposDir, "acme/widgets",
		gittest.Commit{Name: "base", Branch: "main", Message: "base", At: at, Files: map[string]string{"a": "1"}},
		gittest.Commit{Name: "pr1", Branch: "feature/x", Parents: []string{"base"}, Message: "pr1", At: at.Add(time.Minute), Files: map[string]string{"b": "1"}},
		gittest.Commit{Name: "merge1", Branch: "main", Parents: []string{"base", "pr1"}, Message: "merge 1", At: at.Add(2 * time.Minute)},
		gittest.Commit{Name: "pr2", Branch: "feature/y", Parents: []string{"base"}, Message: "pr2", At: at.Add(3 * time.Minute), Files: map[string]string{"c": "1"}},
		gittest.Commit{Name: "merge2", Branch: "main", Parents: []string{"merge1", "pr2"}, Message: "merge 2", At: at.Add(4 * time.Minute)},
	)
	seedMerged(t, cfg.DataDir, map[string]string{"acme/widgets#1": repo.SHA["merge1"], "acme/widgets#2": repo.SHA["merge2"]})

	verify := func(args ...string) (int, ledger.VerifyReport, string) {
		t.Helper()
		code, out, errOut := runCLI(t, append([]string{"ledger", "verify", "--data", cfg.DataDir, "--json"}, args...)...)
		var rep ledger.VerifyReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("ledger verify printed no JSON report (exit %d): %v\n%s%s", code, err, out, errOut)
		}
		return code, rep, errOut
	}
	code, rep, errOut := verify()
	if code != exitOK || rep.MergesChecked != 2 || len(rep.OffBranch) != 0 || rep.Agree != 2 {
		t.Fatalf("both merges on main: exit %d, %d checked, off the branch %+v, %d agree %s; want exit 0, 2 checked, none off",
			code, rep.MergesChecked, rep.OffBranch, rep.Agree, errOut)
	}

	repo.Git("update-ref", "refs/heads/main", repo.SHA["merge1"], repo.SHA["merge2"])
	code, rep, errOut = verify()
	want := ledger.OffBranch{PRID: "acme/widgets#2", Repo: "acme/widgets", Branch: "main", MergeSHA: repo.SHA["merge2"], Problem: "not reachable from the branch"}
	if code != exitFailed || len(rep.OffBranch) != 1 || rep.OffBranch[0] != want || len(rep.Differ) != 0 {
		t.Fatalf("main moved back: exit %d, off the branch %+v, differences %+v %s; want exit 1 and only %+v", code, rep.OffBranch, rep.Differ, errOut, want)
	}
	code, human, errOut := runCLI(t, "ledger", "verify", "--data", cfg.DataDir, "--repair")
	if code != exitFailed || !strings.Contains(human, "acme/widgets#2: merge commit "+repo.SHA["merge2"]+" on main of acme/widgets: not reachable") ||
		strings.Contains(human, "acme/widgets#1:") {
		t.Fatalf("main moved back, human format with --repair: exit %d\n%s%s\nwant exit 1 naming acme/widgets#2 only", code, human, errOut)
	}

	// Without a repos dir nothing is checked, and verify says so.
	code, rep, errOut = verify("--repos", filepath.Join(t.TempDir(), "none"))
	if code != exitOK || rep.MergesChecked != 0 || !strings.Contains(errOut, "not checked") {
		t.Fatalf("no repos dir: exit %d, %d checked %s; want exit 0, nothing checked, a note", code, rep.MergesChecked, errOut)
	}
}

// seedMerged writes one clean merged run per PR (merge commit by PR) into
// the ledger database of dataDir, with the ledger's own code.
func seedMerged(t *testing.T, dataDir string, merges map[string]string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := sqlite.Open(ctx, filepath.Join(dataDir, "db", "ledger.sqlite"), sqlite.Options{}, ledgersqlite.Migrations)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s := &seeder{t: t, ctx: ctx, l: &ledger.Ledger{Store: ledgersqlite.NewStore(db), Proj: &ledger.Projector{}}, log: slog.New(slog.DiscardHandler)}
	for pr, sha := range merges {
		repo, num, _ := contracts.ParsePRID(pr)
		req := contracts.Request{PRID: pr, Repo: repo, PRNumber: num, SourceBranch: "feature/x", TargetBranch: "main",
			HeadSHA: seedHead, Strategy: contracts.StrategyMerge, Title: "Add widgets", RequestedBy: "alice"}
		rq, err := contracts.NewRequested(step.NewID(), "https://forge.test/acme", time.Now(), req, "")
		if err != nil {
			t.Fatal(err)
		}
		s.apply(rq)
		val := s.follow(rq, contracts.TypeMergeValidated, contracts.ServiceValidator,
			contracts.Validated{Request: req, BaseSHA: seedBase, Checks: []contracts.Check{{Context: "ci", State: "success"}}})
		s.apply(val)
		merged := s.follow(val, contracts.TypeMerged, contracts.ServiceMerger,
			contracts.Merged{Request: req, BaseSHA: seedBase, MergeSHA: sha, ChangedPaths: []string{"a.go"}})
		s.apply(merged)
		notified := s.follow(merged, contracts.TypeNotified, contracts.ServiceNotifier,
			contracts.Notified{Request: req, MergeSHA: sha, ChangedPaths: []string{"a.go"}, Deliveries: []contracts.Delivery{}})
		s.apply(notified)
		s.apply(s.follow(notified, contracts.TypeIndexed, contracts.ServiceIndexer,
			contracts.Indexed{Request: req, MergeSHA: sha, Documents: 1}))
	}
}
