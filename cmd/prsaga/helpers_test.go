package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/prsaga/prsaga/cmd/prsaga/internal/sample"
	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/step"
)

// Shared setup of the tests that run prsaga as separate processes
// (replicas, standby, reflock, chaos, faults, forgery).

// cleanEnv is this process's environment without any PRSAGA_ setting, plus
// extra: a child is configured by its flags (and extra) only.
func cleanEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PRSAGA_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// procTest is what every test running prsaga as processes starts with:
// the binary, a process group in a temp dir, and `prsaga nats`.
type procTest struct {
	ctx      context.Context // ends after 3 minutes, or with the test
	dir      string
	bin      string
	procs    *procGroup
	natsURL  string // "" before startProcTest
	reposDir string // <dir>/repos, for the tests' repositories
}

// startProcTest is newProcTest with `prsaga nats` started.
func startProcTest(t *testing.T, skip string) procTest {
	t.Helper()
	pt := newProcTest(t, skip)
	pt.natsURL = pt.procs.startNATS(pt.ctx, pt.bin, pt.dir)
	return pt
}

// newProcTest skips the test in -short mode (skip says why), else builds
// the binary and prepares the process group (it starts nothing);
// everything stops when the test ends.
func newProcTest(t *testing.T, skip string) procTest {
	t.Helper()
	if testing.Short() {
		t.Skip(skip)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	pt := procTest{ctx: ctx, dir: t.TempDir(), bin: buildBinary(t)}
	pt.reposDir = filepath.Join(pt.dir, "repos")
	pt.procs = newProcGroup(t, pt.dir)
	return pt
}

// connect is a client of the test's NATS named name, closed when the
// test ends.
func (pt procTest) connect(t *testing.T, name string) *bus.Bus {
	t.Helper()
	b, err := bus.Connect(pt.ctx, bus.Config{URL: pt.natsURL, Name: name})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

// serveArgs are the arguments of `prsaga serve services` against the
// test's NATS and repositories, its data in data, its store in store
// ("": in data), on a free HTTP address (returned), logging at info on
// stdout, retrying after 200ms, 1s, 2s; extra flags follow.
func (pt procTest) serveArgs(t *testing.T, services, data, store string, extra ...string) (args []string, addr string) {
	t.Helper()
	addr = freeAddr(t)
	args = []string{"serve", services,
		"--nats-url", pt.natsURL,
		"--data", data,
		"--repos", pt.reposDir,
		"--http", addr,
		"--api-token", "", "--status-token", "",
		"--log-level", "info", "--log-dir", "",
		"--backoff", "200ms,1s,2s",
	}
	if store != "" {
		args = append(args, "--store", store)
	}
	return append(args, extra...), addr
}

// serve starts `prsaga serve` with serveArgs as process name; its url is
// set, it is not waited for.
func (pt procTest) serve(t *testing.T, name, services, data, store string, extra ...string) *proc {
	t.Helper()
	args, addr := pt.serveArgs(t, services, data, store, extra...)
	p := pt.procs.start(pt.bin, name, args...)
	p.url = "http://" + addr
	return p
}

// newProcGroup returns a group whose logs go to <dir>/logs, stopped when
// the test ends.
func newProcGroup(t *testing.T, dir string) *procGroup {
	t.Helper()
	procs := &procGroup{t: t, logs: filepath.Join(dir, "logs")}
	t.Cleanup(procs.stopAll) // every child is stopped and waited for
	if err := os.MkdirAll(procs.logs, 0o755); err != nil {
		t.Fatal(err)
	}
	return procs
}

// startNATS starts `prsaga nats` on a free port with its data in
// <dir>/nats and returns its URL once it listens.
func (g *procGroup) startNATS(ctx context.Context, bin, dir string) string {
	g.t.Helper()
	p := g.start(bin, "nats", "nats", "--nats-listen", "127.0.0.1:0", "--data", filepath.Join(dir, "nats"))
	return g.waitFor(ctx, p, regexp.MustCompile(`listening on (nats://\S+)`))
}

// publishRequests publishes a requested event per request, each a new run
// from source, and returns the runs: pr id -> correlation id.
func publishRequests(ctx context.Context, t *testing.T, b *bus.Bus, source string, reqs []contracts.Request) map[string]string {
	t.Helper()
	runs := make(map[string]string, len(reqs))
	for _, r := range reqs {
		id := step.NewID()
		publishRequest(ctx, t, b, id, source, r)
		runs[r.PRID] = id
	}
	return runs
}

// publishRequest publishes r's merge.requested as run id straight on the
// bus, as a forge would.
func publishRequest(ctx context.Context, t *testing.T, b *bus.Bus, id, source string, r contracts.Request) {
	t.Helper()
	e, err := contracts.NewRequested(id, source, time.Now(), r, "")
	if err != nil {
		t.Fatalf("build the request of %s: %v", r.PRID, err)
	}
	if err := b.Publish(ctx, e); err != nil {
		t.Fatalf("publish the request of %s: %v", r.PRID, err)
	}
}

// mainTrailers counts, per PR id, the commits on main carrying its
// Prsaga-PR trailer in the repositories repoOf(0..repos-1).
func mainTrailers(t *testing.T, reposDir string, repos int) map[string]int {
	t.Helper()
	trailers := map[string]int{}
	for k := 0; k < repos; k++ {
		countTrailers(t, filepath.Join(reposDir, repoOf(k)+".git"), trailers)
	}
	return trailers
}

// prRepo creates repository name: main with a README, and per PR i of prs
// a branch pr/<i> adding its own file f_<i>.txt on the initial commit. It
// returns the heads of the branches, in the order of prs.
func prRepo(t *testing.T, reposDir, name string, prs []int) []plumbing.Hash {
	t.Helper()
	r, err := sample.Init(reposDir, name)
	if err != nil {
		t.Fatal(err)
	}
	initial, err := r.Commit("main", plumbing.ZeroHash, map[string]string{"README.md": "# " + name + "\n"}, "Initial commit")
	if err != nil {
		t.Fatal(err)
	}
	heads := make([]plumbing.Hash, 0, len(prs))
	for _, i := range prs {
		file := prFile(i)
		h, err := r.Commit("pr/"+strconv.Itoa(i), initial, map[string]string{file: "file " + strconv.Itoa(i) + "\n"}, "Add "+file)
		if err != nil {
			t.Fatal(err)
		}
		heads = append(heads, h)
	}
	return heads
}

// prFile is the file PR i adds in a prRepo.
func prFile(i int) string { return "f_" + strconv.Itoa(i) + ".txt" }

// everyNth is k, k+step, ... below n: the PRs of repository k when n PRs
// are dealt over step repositories.
func everyNth(k, n, step int) []int {
	var out []int
	for i := k; i < n; i += step {
		out = append(out, i)
	}
	return out
}

// noRequiredChecks has the validator at url require no status check on
// main of the repositories repoOf(0..repos-1): their PRs merge without CI.
func noRequiredChecks(ctx context.Context, t *testing.T, url string, repos int) {
	t.Helper()
	for k := 0; k < repos; k++ {
		owner, name, _ := strings.Cut(repoOf(k), "/")
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, url+"/api/v1/repos/"+owner+"/"+name+"/protection/main",
			strings.NewReader(`{"required_contexts":[]}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("protection of %s: %v", repoOf(k), err)
		}
		resp.Body.Close()
		if resp.StatusCode >= 300 {
			t.Fatalf("protection of %s: HTTP %d", repoOf(k), resp.StatusCode)
		}
	}
}

// readFile is the file's text; a test without it fails.
func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
