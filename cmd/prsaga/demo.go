package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/prsaga/prsaga/cmd/prsaga/internal/client"
	"github.com/prsaga/prsaga/cmd/prsaga/internal/sample"
	"github.com/prsaga/prsaga/cmd/prsaga/internal/stack"
	"github.com/prsaga/prsaga/contracts"
)

// scenario is one demo PR: how to prepare it and how it must end.
type scenario struct {
	name      string
	pr        contracts.Request
	ci        string // commit status "ci" posted on the head
	wantState contracts.State
	wantStep  contracts.State
}

// cmdDemo runs the scenarios against a fresh stack in a temp dir.
func cmdDemo(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs, load := newFlags("demo", getenv, stderr)
	keep := fs.Bool("keep", false, "keep the temp dir (logs, databases, repositories)")
	timeout := fs.Duration("timeout", 60*time.Second, "give up on a scenario after this long")
	if _, err := parseInterspersed(fs, args); err != nil {
		return parseError(err, stderr)
	}
	cfg, err := load()
	if err != nil {
		return parseError(err, stderr)
	}
	dir, err := os.MkdirTemp("", "prsaga-demo-")
	if err != nil {
		fmt.Fprintf(stderr, "prsaga demo: %v\n", err)
		return exitFailed
	}
	if *keep {
		fmt.Fprintf(stdout, "data in %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	cfg.DataDir = dir
	cfg.ReposDir = filepath.Join(dir, "repos")
	cfg.Store = "sqlite://" + filepath.Join(dir, "db")
	cfg.LogDir = filepath.Join(dir, "logs")
	cfg.APIToken, cfg.StatusToken = "", ""
	cfg.WebhookAllowPrivate = true // the demo's webhook receiver is on loopback
	cfg.Backoff = []time.Duration{100 * time.Millisecond, 500 * time.Millisecond}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintf(stderr, "prsaga demo: %v\n", err)
		return exitFailed
	}
	st, err := stack.Start(ctx, stack.Options{Config: cfg, HTTPListener: ln, NATSListen: "-"})
	if err != nil {
		fmt.Fprintf(stderr, "prsaga demo: %v\n", err)
		return exitFailed
	}
	defer st.Stop()
	c := client.New(st.URL, "")

	var hooks atomic.Int64
	hook := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hooks.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}), ReadHeaderTimeout: 5 * time.Second}
	hookLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintf(stderr, "prsaga demo: %v\n", err)
		return exitFailed
	}
	go hook.Serve(hookLn)
	defer hook.Close()

	scenarios, err := prepareDemo(cfg.ReposDir)
	if err != nil {
		fmt.Fprintf(stderr, "prsaga demo: prepare repositories: %v\n", err)
		return exitFailed
	}
	if err := c.PutWatchers(ctx, "acme/widgets", []map[string]string{{"url": "http://" + hookLn.Addr().String() + "/hook", "secret": "demo-secret"}}); err != nil {
		fmt.Fprintf(stderr, "prsaga demo: register watcher: %v\n", err)
		return exitFailed
	}
	fmt.Fprintf(stdout, "prsaga demo: %d scenarios, API %s\n\n", len(scenarios), st.URL)
	failed := 0
	for _, sc := range scenarios {
		ok := runScenario(ctx, c, sc, *timeout, stdout)
		if !ok {
			failed++
		}
	}
	fmt.Fprintf(stdout, "webhook deliveries received: %d\n", hooks.Load())
	if failed > 0 {
		fmt.Fprintf(stdout, "\n%d of %d scenarios did NOT end as expected (logs: rerun with --keep)\n", failed, len(scenarios))
		return exitFailed
	}
	fmt.Fprintf(stdout, "\nall %d scenarios ended as expected\n", len(scenarios))
	return exitOK
}

func runScenario(ctx context.Context, c *client.Client, sc scenario, timeout time.Duration, out io.Writer) bool {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	want := string(sc.wantState)
	if sc.wantStep != "" {
		want += " at " + string(sc.wantStep)
	}
	fmt.Fprintf(out, "== %s: %s, expect %s\n", sc.name, sc.pr.PRID, want)
	if err := c.PostStatus(ctx, sc.pr.Repo, sc.pr.HeadSHA, "ci", sc.ci); err != nil {
		fmt.Fprintf(out, "   FAIL: post status: %v\n\n", err)
		return false
	}
	acc, err := c.Merge(ctx, sc.pr)
	if err != nil {
		fmt.Fprintf(out, "   FAIL: merge request: %v\n\n", err)
		return false
	}
	s, err := c.Wait(ctx, sc.pr.PRID, acc.CorrelationID)
	if err != nil {
		fmt.Fprintf(out, "   FAIL: %v\n\n", err)
		return false
	}
	printTimeline(out, s)
	if s.LastError != "" {
		fmt.Fprintf(out, "  last error: %s\n", s.LastError)
	}
	if s.State != string(sc.wantState) || s.FailedStep != string(sc.wantStep) {
		fmt.Fprintf(out, "   FAIL: ended %s %s\n\n", s.State, s.FailedStep)
		return false
	}
	fmt.Fprintf(out, "   ok\n\n")
	return true
}

// prepareDemo creates the sample repositories and returns the scenarios.
func prepareDemo(reposDir string) ([]scenario, error) {
	w, err := sample.Init(reposDir, "acme/widgets")
	if err != nil {
		return nil, err
	}
	base, err := w.Commit("main", plumbing.ZeroHash, map[string]string{"README.md": "# widgets\n", "src/widget.go": "package widget\n"}, "initial commit")
	if err != nil {
		return nil, err
	}
	hello, err := w.Commit("feature/hello", base, map[string]string{"src/hello.go": "package widget\n\n// Hello greets.\nfunc Hello() string { return \"hello\" }\n"}, "add Hello")
	if err != nil {
		return nil, err
	}
	broken, err := w.Commit("feature/broken", base, map[string]string{"src/broken.go": "package widget\n\nfunc Broken( {\n"}, "add a broken file")
	if err != nil {
		return nil, err
	}
	g, err := sample.Init(reposDir, "acme/gadgets")
	if err != nil {
		return nil, err
	}
	gbase, err := g.Commit("", plumbing.ZeroHash, map[string]string{"README.md": "# gadgets\nversion 1\n"}, "initial commit")
	if err != nil {
		return nil, err
	}
	if _, err := g.Commit("main", gbase, map[string]string{"README.md": "# gadgets\nversion 2 (main)\n"}, "bump on main"); err != nil {
		return nil, err
	}
	clash, err := g.Commit("feature/readme", gbase, map[string]string{"README.md": "# gadgets\nversion 2 (feature)\n"}, "bump on the branch")
	if err != nil {
		return nil, err
	}
	req := func(repo string, n int, src string, head plumbing.Hash, title string) contracts.Request {
		return contracts.Request{
			PRID: contracts.PRID(repo, n), Repo: repo, PRNumber: n,
			SourceBranch: src, TargetBranch: "main", HeadSHA: head.String(),
			Strategy: contracts.StrategyMerge, Title: title, RequestedBy: "demo",
		}
	}
	return []scenario{
		{name: "clean merge (one watcher notified)", pr: req("acme/widgets", 1, "feature/hello", hello, "Add Hello"), ci: "success", wantState: contracts.StateMerged},
		{name: "CI failed", pr: req("acme/widgets", 2, "feature/broken", broken, "Add a broken file"), ci: "failure", wantState: contracts.StateMergeFailed, wantStep: contracts.StateValidating},
		{name: "conflict", pr: req("acme/gadgets", 3, "feature/readme", clash, "Bump the README"), ci: "success", wantState: contracts.StateMergeFailed, wantStep: contracts.StateMerging},
	}, nil
}
