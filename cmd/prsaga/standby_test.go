package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prsaga/prsaga/cmd/prsaga/internal/client"
	"github.com/prsaga/prsaga/contracts"
)

// TestStandbyIndexerTakesOver runs two `prsaga serve indexer` processes on
// one index (one data directory) beside one NATS server and one process of
// the other services: the second waits as a standby, /readyz failing with
// "standby: index … held by …", instead of exiting. The active one is
// SIGKILLed in the middle of a run; the standby becomes ready within
// seconds and indexes the rest — what the killed one had taken and not
// acknowledged is redelivered, and the run's second half comes after the
// kill — so every saga ends MERGED, each PR once on main and once in the
// index.
func TestStandbyIndexerTakesOver(t *testing.T) {
	const prs, repos = 60, 3
	pt := startProcTest(t, "builds the binary and runs four processes")
	ctx, dir, procs, reposDir := pt.ctx, pt.dir, pt.procs, pt.reposDir
	reqs := prepareRepos(t, reposDir, prs, repos)
	storeDir := filepath.Join(dir, "db")
	serve := func(name, services, data string) *proc {
		return pt.serve(t, name, services, data, "sqlite://"+storeDir, "--indexer-http", "",
			// What the killed indexer took and never acknowledged comes
			// back after the ack wait.
			"--ack-wait", "2s")
	}
	others := serve("services", "validator,merger,notifier,ledger", filepath.Join(dir, "proc", "services"))
	indexData := filepath.Join(dir, "proc", "indexer") // both indexers: one index
	active := serve("indexer-1", "indexer", indexData)
	procs.waitReady(ctx, others)
	procs.waitReady(ctx, active)
	standby := serve("indexer-2", "indexer", indexData)

	// The second indexer stays up as a standby and says so — past the
	// index's lock timeout (5s), after which it used to exit.
	started := time.Now()
	reason := waitReadyz(ctx, t, standby, func(code int, body string) bool {
		return code == http.StatusServiceUnavailable && strings.Contains(body, "standby: index ") &&
			time.Since(started) > 6*time.Second
	})
	if !strings.Contains(reason, "held by another indexer (pid ") {
		t.Errorf("the standby's /readyz: %s; want it naming the indexer holding the index", reason)
	}

	noRequiredChecks(ctx, t, others.url, repos)
	b := pt.connect(t, "standby-test")
	// Half the run first. The active indexer is killed once a quarter of
	// the run is MERGED: the rest of the first half is in flight (taken and
	// not acknowledged, or still on its way) or already done — a fast
	// machine can finish it between two looks at the ledger — and the
	// second half, published after the kill, is the standby's whatever the
	// killed one finished.
	runs := publishRequests(ctx, t, b, "urn:prsaga:standby-test", reqs[:prs/2])

	ledger := client.New(others.url, "")
	waitMerged(ctx, t, procs, ledger, prs/4, active)
	if err := active.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	<-active.done
	maps.Copy(runs, publishRequests(ctx, t, b, "urn:prsaga:standby-test", reqs[prs/2:]))
	waitReadyz(ctx, t, standby, func(code int, _ string) bool { return code == http.StatusOK })
	takeover := time.Since(killed)
	t.Logf("the standby was ready %s after the active indexer was killed", takeover.Round(time.Millisecond))
	if takeover > 10*time.Second {
		t.Errorf("takeover took %s; want seconds", takeover)
	}

	merged := waitMerged(ctx, t, procs, ledger, prs, active)
	for pr, corr := range runs {
		if s := merged[pr]; s.CorrelationID != corr || !s.Merged {
			t.Errorf("%s: %+v, want MERGED by run %s", pr, s, corr)
		}
	}
	trailers := mainTrailers(t, reposDir, repos)
	// Once in the index: the survivor's search finds each PR exactly once.
	indexed := map[string]int{}
	var total uint64
	for k := 0; k < repos; k++ {
		res := searchRepo(ctx, t, standby.url, repoOf(k))
		total += res.Total
		for _, h := range res.Hits {
			indexed[h.PRID]++
		}
	}
	for pr := range runs {
		if n := trailers[pr]; n != 1 {
			t.Errorf("%s: %d merge commits with its trailer on main, want 1", pr, n)
		}
		if n := indexed[pr]; n != 1 {
			t.Errorf("%s: %d documents in the index, want 1", pr, n)
		}
	}
	if total != prs || len(indexed) != prs {
		t.Errorf("the index holds %d documents of %d PRs, want %d", total, len(indexed), prs)
	}
	// Both took part: the killed one before, the standby after.
	for _, p := range []*proc{active, standby} {
		b, err := os.ReadFile(p.log)
		if err != nil {
			t.Fatal(err)
		}
		n := strings.Count(string(b), `"msg":"indexed"`)
		if n == 0 {
			t.Errorf("%s indexed nothing", p.name)
		}
		t.Logf("%s: %d indexed lines", p.name, n)
	}
}

// waitReadyz polls p's /readyz until done(code, body) and returns the body.
func waitReadyz(ctx context.Context, t *testing.T, p *proc, done func(code int, body string) bool) string {
	t.Helper()
	hc := &http.Client{Timeout: 2 * time.Second}
	last := ""
	for {
		if resp, err := hc.Get(p.url + "/readyz"); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			last = fmt.Sprintf("%d %s", resp.StatusCode, b)
			if done(resp.StatusCode, string(b)) {
				return string(b)
			}
		}
		select {
		case <-p.done:
			t.Fatalf("%s exited (%v): %s", p.name, p.err, logTail(p.log, 8))
		case <-ctx.Done():
			t.Fatalf("%s: /readyz last said %q: %s", p.name, last, logTail(p.log, 8))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitMerged waits until at least n sagas are MERGED (none failed) and
// returns them; every process but the one the test kills must stay up.
func waitMerged(ctx context.Context, t *testing.T, procs *procGroup, ledger *client.Client, n int, killed *proc) map[string]client.Saga {
	t.Helper()
	for {
		merged := map[string]client.Saga{}
		cursor := ""
		for {
			page, err := ledger.List(ctx, "", "", cursor, 500)
			if err != nil {
				t.Fatalf("list sagas: %v", err)
			}
			for _, s := range page.Sagas {
				switch s.State {
				case contracts.StateMerged:
					merged[s.PRID] = s
				case contracts.StateMergeFailed:
					t.Fatalf("%s failed at %s: %s", s.PRID, s.FailedStep, s.LastError)
				}
			}
			if cursor = page.NextCursor; cursor == "" {
				break
			}
		}
		if len(merged) >= n {
			return merged
		}
		for _, p := range procs.all() {
			if p == killed {
				continue
			}
			select {
			case <-p.done:
				t.Fatalf("%s exited during the run (%v): %s", p.name, p.err, logTail(p.log, 8))
			default:
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d of %d sagas MERGED before the deadline", len(merged), n)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

type searchResult struct {
	Total uint64 `json:"total"`
	Hits  []struct {
		PRID string `json:"pr_id"`
	} `json:"hits"`
}

// searchRepo lists a repository's PRs in the index.
func searchRepo(ctx context.Context, t *testing.T, base, repo string) searchResult {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/search?"+url.Values{"repo": {repo}, "limit": {"1000"}}.Encode(), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out searchResult
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("search %s: HTTP %d %s", repo, resp.StatusCode, b)
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}
