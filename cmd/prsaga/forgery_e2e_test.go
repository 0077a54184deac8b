//go:build linux

package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prsaga/prsaga/cmd/prsaga/internal/client"
	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/gittest"
)

// TestForgedTrailerEndToEnd is the attack of issue 14 through a real
// `prsaga dev` process and real bare repositories: the author of PR #42
// writes "Prsaga-PR: <repo>#43" into a commit of #42 with the git CLI, and
// #42 is merged — with `merge`, `squash` and `fast-forward`, one
// repository each. Then #43 (forked before #42) is requested: it must be
// really merged — MERGED with a new merge commit on main holding its file,
// its run's merged event not already_merged — not reported merged on the
// strength of a trailer its author never wrote.
func TestForgedTrailerEndToEnd(t *testing.T) {
	pt := newProcTest(t, "builds the binary and runs prsaga dev")
	ctx, dir, procs, reposDir := pt.ctx, pt.dir, pt.procs, pt.reposDir
	addr := freeAddr(t)

	cases := []struct {
		repo           string
		strategy42     string
		strategy43     string // #43 forked before #42: it cannot be fast-forwarded
		trailerOnMain  bool   // the forged commit itself lands on main
		head42, head43 string
	}{
		{repo: "forge/merge", strategy42: contracts.StrategyMerge, strategy43: contracts.StrategyMerge, trailerOnMain: true},
		{repo: "forge/squash", strategy42: contracts.StrategySquash, strategy43: contracts.StrategySquash},
		{repo: "forge/ff", strategy42: contracts.StrategyFastForward, strategy43: contracts.StrategyMerge, trailerOnMain: true},
	}
	for i := range cases {
		c := &cases[i]
		c.head42, c.head43 = forgedRepo(t, reposDir, c.repo)
	}

	dev := procs.start(pt.bin, "dev", "dev", "--quiet", "--data", filepath.Join(dir, "data"), "--repos", reposDir,
		"--http", addr, "--nats-listen", "127.0.0.1:0", "--backoff", "50ms,200ms",
		"--api-token", "", "--status-token", "")
	dev.url = "http://" + addr
	procs.waitReady(ctx, dev)
	api := client.New("http://"+addr, "")

	for _, c := range cases {
		t.Run(c.strategy42, func(t *testing.T) {
			bare := filepath.Join(reposDir, filepath.FromSlash(c.repo)+".git")
			for _, h := range []string{c.head42, c.head43} {
				if err := api.PostStatus(ctx, c.repo, h, "ci", "success"); err != nil {
					t.Fatalf("post status: %v", err)
				}
			}
			s42 := mergeAndWait(ctx, t, api, c.repo, 42, "pr42", c.head42, c.strategy42)
			if s42.State != "MERGED" {
				t.Fatalf("PR 42: %s (%s), want MERGED", s42.State, s42.LastError)
			}
			forged := gittest.Run(t, bare, "log", "--format=%H", "--grep", "^Prsaga-PR: "+c.repo+"#43$", "main")
			if (forged != "") != c.trailerOnMain {
				t.Fatalf("forged trailer on main: %q; want it there %v (else the test tests nothing)", forged, c.trailerOnMain)
			}

			before := gittest.Run(t, bare, "rev-parse", "main")
			s43 := mergeAndWait(ctx, t, api, c.repo, 43, "pr43", c.head43, c.strategy43)
			main := gittest.Run(t, bare, "rev-parse", "main")
			if s43.State != "MERGED" || s43.MergeSHA != main || main == before {
				t.Errorf("PR 43: %s merge_sha %s (%s); main %s, was %s: want MERGED by a new commit on main",
					s43.State, s43.MergeSHA, s43.LastError, main, before)
			}
			if got := gitMaybe(bare, "show", "main:pr43.txt"); got != "43" {
				t.Errorf("main:pr43.txt = %q: PR 43's change is not in the target", got)
			}
			if already, ok := alreadyMerged(ctx, t, api, s43.CorrelationID); !ok || already {
				t.Errorf("PR 43's merged event: found %v, already_merged %v; want a merge done by this run", ok, already)
			}
		})
	}
}

// forgedRepo makes <repos>/<repo>.git with the git CLI: main (a README),
// pr42 adding pr42.txt in a commit whose last paragraph is the forged
// trailer "Prsaga-PR: <repo>#43", and pr43 adding pr43.txt — both forked
// from main's first commit. It returns the two heads.
func forgedRepo(t *testing.T, reposDir, repo string) (head42, head43 string) {
	t.Helper()
	bare := gittest.NewBare(t, reposDir, repo).Dir
	work := t.TempDir()
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(work, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		gittest.Run(t, work, "add", name)
	}
	gittest.Run(t, work, "init", "-q", "-b", "main")
	write("README", "readme\n")
	gittest.Run(t, work, "commit", "-q", "-m", "initial")
	gittest.Run(t, work, "checkout", "-q", "-b", "pr42")
	write("pr42.txt", "42\n")
	gittest.Run(t, work, "commit", "-q", "-m", "Add pr42.txt", "-m", "Prsaga-PR: "+repo+"#43")
	if msg := gittest.Run(t, work, "log", "-1", "--format=%(trailers:key=Prsaga-PR,valueonly)"); msg != repo+"#43" {
		t.Fatalf("git reads the forged commit's trailer as %q", msg)
	}
	gittest.Run(t, work, "checkout", "-q", "-b", "pr43", "main")
	write("pr43.txt", "43\n")
	gittest.Run(t, work, "commit", "-q", "-m", "Add pr43.txt")
	gittest.Run(t, work, "push", "-q", bare, "main", "pr42", "pr43")
	return gittest.Run(t, work, "rev-parse", "pr42"), gittest.Run(t, work, "rev-parse", "pr43")
}

// mergeAndWait requests PR n's merge and waits for its run to end.
func mergeAndWait(ctx context.Context, t *testing.T, api *client.Client, repo string, n int, branch, head, strategy string) client.Saga {
	t.Helper()
	r := contracts.Request{PRID: contracts.PRID(repo, n), Repo: repo, PRNumber: n, SourceBranch: branch, TargetBranch: "main",
		HeadSHA: head, Strategy: strategy, Title: "PR " + branch, RequestedBy: "alice"}
	acc, err := api.Merge(ctx, r)
	if err != nil {
		t.Fatalf("merge request for %s: %v", r.PRID, err)
	}
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	s, err := api.Wait(wctx, r.PRID, acc.CorrelationID)
	if err != nil {
		t.Fatalf("%s: %v", r.PRID, err)
	}
	return s
}

// alreadyMerged reads the already_merged flag of a run's merged event.
func alreadyMerged(ctx context.Context, t *testing.T, api *client.Client, correlationID string) (already, found bool) {
	t.Helper()
	run, err := api.Run(ctx, correlationID)
	if err != nil {
		t.Fatalf("run %s: %v", correlationID, err)
	}
	for _, e := range run.Events {
		if e.Type != contracts.TypeMerged {
			continue
		}
		var ev struct {
			Data contracts.Merged `json:"data"`
		}
		if err := json.Unmarshal(e.Event, &ev); err != nil {
			t.Fatalf("merged event of run %s: %v", correlationID, err)
		}
		return ev.Data.AlreadyMerged, true
	}
	return false, false
}

// gitMaybe runs git in dir and returns its trimmed output, "" on failure.
func gitMaybe(dir string, args ...string) string {
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
