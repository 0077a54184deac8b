package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/prsaga/prsaga/cmd/prsaga/internal/client"
	"github.com/prsaga/prsaga/contracts"
)

// TestReplicas runs the scale-out shape of design §9 on one host: one
// `prsaga nats` process, two `prsaga serve` processes of the validator,
// merger, notifier and ledger and one of the indexer (a bleve index has one
// writer), all on one shared store directory — the two replicas of a
// service share its SQLite file, which WAL and the busy timeout make safe
// on one host — and one repositories directory. It pushes 300 sagas and
// checks that every one is MERGED exactly once: the ledger says MERGED for
// this run, and the target branch holds exactly one merge commit with the
// PR's Prsaga-PR trailer.
func TestReplicas(t *testing.T) {
	const prs, repos = 300, 6
	pt := startProcTest(t, "builds the binary and runs ten processes")
	ctx, dir, procs, reposDir := pt.ctx, pt.dir, pt.procs, pt.reposDir
	reqs := prepareRepos(t, reposDir, prs, repos)

	storeDir := filepath.Join(dir, "db")
	urls := map[string][]string{}
	for _, svc := range []struct {
		name     string
		replicas int
	}{{"validator", 2}, {"merger", 2}, {"notifier", 2}, {"indexer", 1}, {"ledger", 2}} {
		for i := 1; i <= svc.replicas; i++ {
			name := fmt.Sprintf("%s-%d", svc.name, i)
			p := pt.serve(t, name, svc.name, filepath.Join(dir, "proc", name), "sqlite://"+storeDir, "--"+svc.name+"-http", "")
			urls[svc.name] = append(urls[svc.name], p.url)
		}
	}
	for _, p := range procs.all() {
		if p.url != "" {
			procs.waitReady(ctx, p)
		}
	}

	// No required status checks: the run is about scale-out, not CI.
	noRequiredChecks(ctx, t, urls["validator"][0], repos)

	b := pt.connect(t, "replicas-test")
	start := time.Now()
	runs := publishRequests(ctx, t, b, "urn:prsaga:replicas-test", reqs) // pr id -> correlation id

	// Wait until the ledgers hold every saga as MERGED (each ledger's API
	// reads the shared ledger database).
	ledger := client.New(urls["ledger"][1], "")
	merged := waitMerged(ctx, t, procs, ledger, prs, nil)
	t.Logf("%d sagas MERGED in %s across %d processes", prs, time.Since(start).Round(time.Millisecond), len(procs.all()))

	for pr, corr := range runs {
		s := merged[pr]
		if s.CorrelationID != corr || !s.Merged || s.MergeSHA == "" {
			t.Errorf("%s: %+v, want MERGED by run %s with a merge sha", pr, s, corr)
		}
	}
	// Exactly once in git: one commit carrying each PR's trailer on main.
	trailers := mainTrailers(t, reposDir, repos)
	for pr := range runs {
		if n := trailers[pr]; n != 1 {
			t.Errorf("%s: %d merge commits with its Prsaga-PR trailer on main, want exactly 1", pr, n)
		}
	}
	if len(trailers) != prs {
		t.Errorf("trailers name %d PRs, want %d", len(trailers), prs)
	}
	// Both replicas of each scaled service took part: JetStream shares a
	// durable consumer's messages among its instances.
	for _, c := range []struct{ service, line string }{
		{"validator", `"msg":"validated"`}, {"merger", `"msg":"merged"`},
		{"notifier", `"msg":"notified"`}, {"ledger", `"msg":"saga_transition"`},
	} {
		for i := 1; i <= 2; i++ {
			log := filepath.Join(procs.logs, fmt.Sprintf("%s-%d.log", c.service, i))
			b, err := os.ReadFile(log)
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(string(b), c.line); n == 0 {
				t.Errorf("%s-%d handled no event (no %s line): the replicas did not share the work", c.service, i, c.line)
			} else {
				t.Logf("%s-%d: %d %s lines", c.service, i, n, c.line)
			}
		}
	}
}

func repoOf(k int) string { return fmt.Sprintf("scale/r%02d", k) }

// prepareRepos creates the repositories: main with one commit, and per PR
// a branch pr/<i> adding its own file on top of it; every PR merges into
// main with a merge commit.
func prepareRepos(t *testing.T, reposDir string, prs, repos int) []contracts.Request {
	t.Helper()
	reqs := make([]contracts.Request, 0, prs)
	for k := 0; k < repos; k++ {
		name := repoOf(k)
		ours := everyNth(k, prs, repos)
		for j, h := range prRepo(t, reposDir, name, ours) {
			i, file := ours[j], prFile(ours[j])
			reqs = append(reqs, contracts.Request{
				PRID: contracts.PRID(name, i+1), Repo: name, PRNumber: i + 1,
				SourceBranch: "pr/" + strconv.Itoa(i), TargetBranch: "main", HeadSHA: h.String(),
				Strategy: contracts.StrategyMerge, Title: "Add " + file, RequestedBy: "replicas-test",
			})
		}
	}
	return reqs
}

// countTrailers counts, per PR id, the commits reachable from main that
// carry a Prsaga-PR trailer.
func countTrailers(t *testing.T, gitDir string, counts map[string]int) {
	t.Helper()
	r, err := gogit.PlainOpen(gitDir)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := r.Reference(plumbing.NewBranchReferenceName("main"), true)
	if err != nil {
		t.Fatal(err)
	}
	iter, err := r.Log(&gogit.LogOptions{From: ref.Hash()})
	if err != nil {
		t.Fatal(err)
	}
	defer iter.Close()
	err = iter.ForEach(func(c *object.Commit) error {
		for _, line := range strings.Split(c.Message, "\n") {
			if pr, ok := strings.CutPrefix(line, "Prsaga-PR: "); ok {
				counts[strings.TrimSpace(pr)]++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
