package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/prsaga/prsaga/cmd/prsaga/internal/client"
	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
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
	ctx, dir, procs, natsURL, reposDir := pt.ctx, pt.dir, pt.procs, pt.natsURL, pt.reposDir
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
	validator := client.New(urls["validator"][0], "")
	for k := 0; k < repos; k++ {
		owner, name, _ := strings.Cut(repoOf(k), "/")
		var out any
		if err := validatorDo(ctx, validator, "/api/v1/repos/"+owner+"/"+name+"/protection/main", &out); err != nil {
			t.Fatalf("protection of %s: %v", repoOf(k), err)
		}
	}

	b, err := bus.Connect(ctx, bus.Config{URL: natsURL, Name: "replicas-test"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
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

func validatorDo(ctx context.Context, c *client.Client, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, c.BaseURL+path, strings.NewReader(`{"required_contexts":[]}`))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return nil
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// procGroup owns the test's child processes: each is started with its
// output in a log file, and stopAll stops (SIGTERM, then SIGKILL after a
// grace period) and waits for every one.
type procGroup struct {
	t    *testing.T
	logs string
	mu   sync.Mutex
	ps   []*proc
}

type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	url  string
	done chan struct{}
	err  error
}

func (g *procGroup) start(bin, name string, args ...string) *proc {
	g.t.Helper()
	return g.startArgv(name, nil, append([]string{bin}, args...)...)
}

// startArgv starts argv (a command and its arguments) as process name,
// with env added to its PRSAGA_-free environment.
func (g *procGroup) startArgv(name string, env []string, argv ...string) *proc {
	g.t.Helper()
	p := &proc{name: name, log: filepath.Join(g.logs, name+".log"), done: make(chan struct{})}
	out, err := os.Create(p.log)
	if err != nil {
		g.t.Fatal(err)
	}
	defer out.Close() // the child has its own descriptor
	p.cmd = exec.Command(argv[0], argv[1:]...)
	p.cmd.Env = cleanEnv(env...)
	p.cmd.Stdout, p.cmd.Stderr = out, out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive the test binary
	if err := p.cmd.Start(); err != nil {
		g.t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	g.mu.Lock()
	g.ps = append(g.ps, p)
	g.mu.Unlock()
	return p
}

func (g *procGroup) all() []*proc {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]*proc(nil), g.ps...)
}

// waitFor waits until the process's output matches re and returns the
// first submatch.
func (g *procGroup) waitFor(ctx context.Context, p *proc, re *regexp.Regexp) string {
	g.t.Helper()
	for {
		b, _ := os.ReadFile(p.log)
		if m := re.FindSubmatch(b); m != nil {
			return string(m[1])
		}
		select {
		case <-p.done:
			g.t.Fatalf("%s exited (%v): %s", p.name, p.err, logTail(p.log, 8))
		case <-ctx.Done():
			g.t.Fatalf("%s: no %s in its output: %s", p.name, re, logTail(p.log, 8))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// waitReady waits until the process answers /readyz.
func (g *procGroup) waitReady(ctx context.Context, p *proc) {
	g.t.Helper()
	hc := &http.Client{Timeout: 2 * time.Second}
	for {
		if resp, err := hc.Get(p.url + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-p.done:
			g.t.Fatalf("%s exited at start (%v): %s", p.name, p.err, logTail(p.log, 8))
		case <-ctx.Done():
			g.t.Fatalf("%s not ready: %s", p.name, logTail(p.log, 8))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stopAll stops the services first, then the NATS server: SIGTERM, and
// SIGKILL for what still runs after 20s; it returns once every process
// has been waited for.
func (g *procGroup) stopAll() {
	ps := g.all()
	stop := func(ps []*proc) {
		for _, p := range ps {
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
		}
		deadline := time.After(20 * time.Second)
		for _, p := range ps {
			select {
			case <-p.done:
			case <-deadline:
				_ = p.cmd.Process.Kill()
				<-p.done
			}
		}
	}
	var services, broker []*proc
	for _, p := range ps {
		if p.name == "nats" {
			broker = append(broker, p)
		} else {
			services = append(services, p)
		}
	}
	stop(services)
	stop(broker)
	for _, p := range ps {
		select {
		case <-p.done:
		default:
			g.t.Errorf("%s is still running", p.name)
		}
	}
}
