package main

import (
	"context"
	"flag"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prsaga/prsaga/cmd/prsaga/internal/client"
	"github.com/prsaga/prsaga/cmd/prsaga/internal/stack"
	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/config"
	"github.com/prsaga/prsaga/platform/gittest"
	"github.com/prsaga/prsaga/platform/step"
)

// testConfig is the default configuration rooted in a temp dir.
func testConfig(t *testing.T) config.Config {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	load := config.Bind(fs, func(string) string { return "" })
	dir := t.TempDir()
	if err := fs.Parse([]string{"--data", dir, "--backoff", "50ms,200ms", "--log-dir", filepath.Join(dir, "logs")}); err != nil {
		t.Fatal(err)
	}
	cfg, err := load()
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// startStack runs all five services in process on random ports.
func startStack(t *testing.T, cfg config.Config) *stack.Stack {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := stack.Start(ctx, stack.Options{Config: cfg, HTTPListener: ln, NATSListen: "127.0.0.1:0"})
	if err != nil {
		t.Fatalf("start stack: %v", err)
	}
	t.Cleanup(st.Stop)
	return st
}

// makeRepo creates <repos>/<repo>.git with main (one commit) and a branch
// with one more commit on top; it returns the bare dir and the branch head.
func makeRepo(t *testing.T, reposDir, repo, branch string) (bare, head string) {
	t.Helper()
	now := time.Now()
	r := gittest.NewBare(t, reposDir, repo,
		gittest.Commit{Name: "initial", Branch: "main", Message: "initial\n", At: now},
		gittest.Commit{Name: "hello", Branch: branch, Parents: []string{"initial"}, Message: "add hello\n", At: now,
			Files: map[string]string{"hello.txt": "hello\n"}})
	return r.Dir, r.SHA["hello"]
}

func request(repo string, n int, branch, head string) contracts.Request {
	return contracts.Request{
		PRID: contracts.PRID(repo, n), Repo: repo, PRNumber: n,
		SourceBranch: branch, TargetBranch: "main", HeadSHA: head,
		Strategy: contracts.StrategyMerge, Title: "Add hello", RequestedBy: "alice",
	}
}

func waitTerminal(t *testing.T, c *client.Client, pr string) client.Saga {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := c.Wait(ctx, pr, "")
	if err != nil {
		t.Fatalf("saga %s did not finish: %v", pr, err)
	}
	return s
}

func TestEndToEndMerged(t *testing.T) {
	cfg := testConfig(t)
	bare, head := makeRepo(t, cfg.ReposDir, "acme/widgets", "feature/hello")
	st := startStack(t, cfg)
	c := client.New(st.URL, "")
	ctx := context.Background()
	setCI(t, c, "acme/widgets", head, "success")
	r := request("acme/widgets", 42, "feature/hello", head)
	id := step.NewID()
	publishRequest(ctx, t, st.Bus, id, "https://forge.example/acme", r)
	s := waitTerminal(t, c, r.PRID)
	if s.State != "MERGED" || !s.Merged || s.CorrelationID != id {
		t.Fatalf("got state %s merged=%v correlation %s (error %q), want MERGED of run %s", s.State, s.Merged, s.CorrelationID, s.LastError, id)
	}
	if len(s.Transitions) != 5 {
		t.Fatalf("got %d transitions, want 5: %+v", len(s.Transitions), s.Transitions)
	}
	want := []contracts.State{"VALIDATING", "MERGING", "NOTIFYING", "INDEXING", "MERGED"}
	for i, tr := range s.Transitions {
		if tr.To != want[i] || tr.Inferred {
			t.Errorf("transition %d: got to %s inferred=%v, want %s", i, tr.To, tr.Inferred, want[i])
		}
	}
	mainHead := gittest.Run(t, bare, "rev-parse", "main")
	if mainHead != s.MergeSHA {
		t.Errorf("main is %s, saga says merge sha %s", mainHead, s.MergeSHA)
	}
	gittest.Run(t, bare, "merge-base", "--is-ancestor", head, "main") // fails the test if not contained
	if got := gittest.Run(t, bare, "log", "--format=%H", "--grep", "Prsaga-PR: acme/widgets#42", "main"); strings.Count(got, "\n")+1 != 1 || got == "" {
		t.Errorf("want exactly one commit with the PR's trailer on main, got %q", got)
	}
}

func TestEndToEndChecksFailed(t *testing.T) {
	cfg := testConfig(t)
	bare, head := makeRepo(t, cfg.ReposDir, "acme/widgets", "feature/broken")
	before := gittest.Run(t, bare, "rev-parse", "main")
	st := startStack(t, cfg)
	c := client.New(st.URL, "")
	setCI(t, c, "acme/widgets", head, "failure")
	r := request("acme/widgets", 7, "feature/broken", head)
	acc := mustMerge(t, c, r)
	s := waitTerminal(t, c, r.PRID)
	if s.State != "MERGE_FAILED" || s.FailedStep != "VALIDATING" || s.Merged || s.CorrelationID != acc.CorrelationID {
		t.Fatalf("got %s at %s merged=%v, want MERGE_FAILED at VALIDATING, not merged", s.State, s.FailedStep, s.Merged)
	}
	if !strings.Contains(s.LastError, contracts.CodeChecksFailed) {
		t.Errorf("last error %q does not name %s", s.LastError, contracts.CodeChecksFailed)
	}
	if after := gittest.Run(t, bare, "rev-parse", "main"); after != before {
		t.Errorf("main moved from %s to %s", before, after)
	}
}
