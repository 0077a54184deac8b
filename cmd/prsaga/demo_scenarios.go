package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/prsaga/prsaga/cmd/prsaga/internal/client"
	"github.com/prsaga/prsaga/cmd/prsaga/internal/sample"
	"github.com/prsaga/prsaga/contracts"
)

// scenario is one demo PR: how to prepare it and how it must end.
type scenario struct {
	name      string
	pr        contracts.Request
	ci        string // commit status "ci" posted on the head
	wantState contracts.State
	wantStep  contracts.State
	timedOut  bool // the failure must be the watchdog's
	// fix, when set, repairs the cause of the failure; the scenario then
	// retries the saga, which must end MERGED.
	fix func()
}

func runScenario(ctx context.Context, c *client.Client, sc scenario, timeout time.Duration, out io.Writer) bool {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	want := string(sc.wantState)
	if sc.wantStep != "" {
		want += " at " + string(sc.wantStep)
	}
	if sc.fix != nil {
		want += ", then retry → MERGED"
	}
	fmt.Fprintf(out, "== %s: %s, expect %s\n", sc.name, sc.pr.PRID, want)
	fail := func(format string, args ...any) bool {
		fmt.Fprintf(out, "   FAIL: %s\n\n", fmt.Sprintf(format, args...))
		return false
	}
	if err := c.PostStatus(ctx, sc.pr.Repo, sc.pr.HeadSHA, "ci", sc.ci); err != nil {
		return fail("post status: %v", err)
	}
	acc, err := c.Merge(ctx, sc.pr)
	if err != nil {
		return fail("merge request: %v", err)
	}
	s, err := c.Wait(ctx, sc.pr.PRID, acc.CorrelationID)
	if err != nil {
		return fail("%v", err)
	}
	if s.State != sc.wantState || s.FailedStep != sc.wantStep || s.TimedOut != sc.timedOut {
		printTimeline(out, s)
		return fail("ended %s %s (timed out %v), last error %q", s.State, s.FailedStep, s.TimedOut, s.LastError)
	}
	if sc.fix == nil {
		printTimeline(out, s)
		if s.LastError != "" {
			fmt.Fprintf(out, "  last error: %s\n", s.LastError)
		}
		fmt.Fprintf(out, "   ok\n\n")
		return true
	}
	fmt.Fprintf(out, "   %s at %s", s.State, s.FailedStep)
	if s.Merged {
		fmt.Fprintf(out, " — the code IS merged at %s; a follow-up step failed", short(s.MergeSHA))
	}
	fmt.Fprintf(out, "\n   error: %s\n", s.LastError)
	sc.fix()
	r, err := c.Retry(ctx, sc.pr.PRID, client.RetryOptions{})
	if err != nil {
		return fail("retry: %v", err)
	}
	fmt.Fprintf(out, "   retry: replaying %s %s as attempt %d (event %s)\n", r.EventType, short(r.ReplayOf), r.Attempt, short(r.EventID))
	if s, err = waitAttempt(ctx, c, sc.pr.PRID, r.Attempt); err != nil {
		return fail("after the retry: %v", err)
	}
	printTimeline(out, s)
	if s.State != contracts.StateMerged {
		return fail("after the retry: %s at %s: %s", s.State, s.FailedStep, s.LastError)
	}
	fmt.Fprintf(out, "   ok\n\n")
	return true
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// prepareDemo creates the sample repositories and returns the scenarios;
// webhookUp repairs the tools watcher.
func prepareDemo(reposDir string, webhookUp func()) ([]scenario, error) {
	b := &demoRepos{dir: reposDir}
	w := b.init("acme/widgets")
	base := b.commit(w, "main", plumbing.ZeroHash, map[string]string{"README.md": "# widgets\n", "src/widget.go": "package widget\n"}, "initial commit")
	hello := b.commit(w, "feature/hello", base, map[string]string{"src/hello.go": "package widget\n\n// Hello greets.\nfunc Hello() string { return \"hello\" }\n"}, "add Hello")
	broken := b.commit(w, "feature/broken", base, map[string]string{"src/broken.go": "package widget\n\nfunc Broken( {\n"}, "add a broken file")
	g := b.init("acme/gadgets")
	gbase := b.commit(g, "", plumbing.ZeroHash, map[string]string{"README.md": "# gadgets\nversion 1\n"}, "initial commit")
	b.commit(g, "main", gbase, map[string]string{"README.md": "# gadgets\nversion 2 (main)\n"}, "bump on main")
	clash := b.commit(g, "feature/readme", gbase, map[string]string{"README.md": "# gadgets\nversion 2 (feature)\n"}, "bump on the branch")
	tl := b.init("acme/tools")
	tbase := b.commit(tl, "main", plumbing.ZeroHash, map[string]string{"README.md": "# tools\n"}, "initial commit")
	docs := b.commit(tl, "feature/docs", tbase, map[string]string{"docs/usage.md": "# usage\n"}, "document usage")
	cli := b.commit(tl, "feature/cli", tbase, map[string]string{"cmd/tool/main.go": "package main\n\nfunc main() {}\n"}, "add the CLI")
	if b.err != nil {
		return nil, b.err
	}
	req := func(repo string, n int, src string, head plumbing.Hash, title string) contracts.Request {
		return contracts.Request{
			PRID: contracts.PRID(repo, n), Repo: repo, PRNumber: n,
			SourceBranch: src, TargetBranch: "main", HeadSHA: head.String(),
			Strategy: contracts.StrategyMerge, Title: title, RequestedBy: "demo",
		}
	}
	return []scenario{
		{name: "clean merge (one watcher notified)", pr: req("acme/widgets", 1, "feature/hello", hello, "Add Hello"), ci: "success",
			wantState: contracts.StateMerged},
		{name: "CI failed", pr: req("acme/widgets", 2, "feature/broken", broken, "Add a broken file"), ci: "failure",
			wantState: contracts.StateMergeFailed, wantStep: contracts.StateValidating},
		{name: "conflict", pr: req("acme/gadgets", 3, "feature/readme", clash, "Bump the README"), ci: "success",
			wantState: contracts.StateMergeFailed, wantStep: contracts.StateMerging},
		{name: "webhook down after the merge", pr: req("acme/tools", 4, "feature/docs", docs, "Document usage"), ci: "success",
			wantState: contracts.StateMergeFailed, wantStep: contracts.StateNotifying, fix: webhookUp},
		{name: "index step killed: only the watchdog notices", pr: req("acme/tools", 5, "feature/cli", cli, "Add the CLI"), ci: "success",
			wantState: contracts.StateMergeFailed, wantStep: contracts.StateIndexing, timedOut: true, fix: func() {}},
	}, nil
}

// demoRepos writes the sample repositories step by step; the first error
// turns every later step into a no-op and is what prepareDemo returns.
type demoRepos struct {
	dir string
	err error
}

func (b *demoRepos) init(repo string) *sample.Repo {
	if b.err != nil {
		return nil
	}
	r, err := sample.Init(b.dir, repo)
	b.err = err
	return r
}

func (b *demoRepos) commit(r *sample.Repo, branch string, parent plumbing.Hash, files map[string]string, msg string) plumbing.Hash {
	if b.err != nil {
		return plumbing.ZeroHash
	}
	h, err := r.Commit(branch, parent, files, msg)
	b.err = err
	return h
}
