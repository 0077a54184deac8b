//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prsaga/prsaga/cmd/prsaga/internal/backup"
	"github.com/prsaga/prsaga/cmd/prsaga/internal/client"
	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/fault"
	"github.com/prsaga/prsaga/platform/natsembed/natstest"
	"github.com/prsaga/prsaga/services/merger/gitrepo"
)

// faultCase arms one fault point in one service process.
type faultCase struct {
	service, point string
	// holdSecond makes the second watcher's receiver hold its request
	// until the armed process is gone: the round is cut between watchers.
	holdSecond bool
}

// faultCases are the points a merged saga passes, each in the process that
// hits it (docs/operating.md lists them all).
var faultCases = []faultCase{
	{service: "validator", point: fault.AfterEffect(contracts.ConsumerValidator)},
	{service: "validator", point: fault.AfterCommit(contracts.ConsumerValidator)},
	{service: "validator", point: fault.AfterPublish(contracts.ServiceValidator)},
	// The merger's side effect is the ref update, its commit the outbox
	// insert: after-effect is between the two.
	// Dead holding the target's ref lock: the restarted merger breaks it.
	{service: "merger", point: gitrepo.FaultRefLocked},
	// Dead with the old value checked and the new one written, not renamed.
	{service: "merger", point: gitrepo.FaultRefChecked},
	{service: "merger", point: fault.AfterEffect(contracts.ConsumerMerger)},
	{service: "merger", point: fault.AfterCommit(contracts.ConsumerMerger)},
	{service: "merger", point: fault.AfterPublish(contracts.ServiceMerger)},
	{service: "validator", point: fault.AfterEffect(contracts.ConsumerValidatorLock)},
	{service: "validator", point: fault.AfterCommit(contracts.ConsumerValidatorLock)},
	{service: "notifier", point: fault.MidDelivery, holdSecond: true},
	{service: "notifier", point: fault.AfterEffect(contracts.ConsumerNotifier)},
	{service: "notifier", point: fault.AfterCommit(contracts.ConsumerNotifier)},
	{service: "notifier", point: fault.AfterPublish(contracts.ServiceNotifier)},
	{service: "indexer", point: fault.AfterEffect(contracts.ConsumerIndexer)},
	{service: "indexer", point: fault.AfterCommit(contracts.ConsumerIndexer)},
	{service: "indexer", point: fault.AfterPublish(contracts.ServiceIndexer)},
	{service: "ledger", point: fault.AfterEffect(contracts.ConsumerLedger)},
	{service: "ledger", point: fault.AfterCommit(contracts.ConsumerLedger)},
	{service: "ledger", point: fault.AfterPublish(contracts.ServiceLedger)},
}

// hookRecorder is the watchers' receiver: which delivery ids each watcher
// got per saga run, how many were answered 200; requests to a held path
// wait for release.
type hookRecorder struct {
	mu      sync.Mutex
	ids     map[string]map[string]bool // path|correlation id -> delivery ids
	ok      map[string]int             // path|correlation id -> answered 200
	hold    string                     // path whose requests wait for release
	release chan struct{}
}

func (h *hookRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var ev struct {
		CorrelationID string `json:"correlationid"`
	}
	_ = json.Unmarshal(body, &ev)
	key := r.URL.Path + "|" + ev.CorrelationID
	h.mu.Lock()
	if h.ids[key] == nil {
		h.ids[key] = map[string]bool{}
	}
	h.ids[key][r.Header.Get("X-Prsaga-Delivery")] = true
	hold, release := h.hold == r.URL.Path, h.release
	h.mu.Unlock()
	if hold {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		// The notifier that sent this is gone: nobody reads the answer.
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	h.mu.Lock()
	h.ok[key]++
	h.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

// TestFaultPoints runs the services as `prsaga serve` processes on a
// `prsaga nats` process and, for each fault point a merged saga passes,
// arms it in its service (PRSAGA_FAULTS=<point>=exit), submits a saga,
// sees the process exit with fault.ExitCode at that point, restarts it
// unarmed, and waits for the saga to be MERGED. At the end: every saga
// MERGED with one transition per state, one merge commit per PR on main
// (git as the oracle), no saga_transition row twice, each watcher got
// each delivery at least once and always under one delivery id, the DLQ
// empty. The services are started before the NATS server and wait for it
// (issue 7's `serve` before `nats`); the first saga runs unarmed.
// Skipped with -short: it builds the binary and runs a minute or two.
func TestFaultPoints(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and restarts processes for a minute or two")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	dir := t.TempDir()
	exe := buildBinary(t)
	reposDir := filepath.Join(dir, "repos")
	run := randomHex(t, 4)
	prs := chaosRepos(t, reposDir, 1+len(faultCases), 1, 1, run)

	hooks := &hookRecorder{ids: map[string]map[string]bool{}, ok: map[string]int{}}
	receiver := httptest.NewServer(hooks)
	t.Cleanup(receiver.Close)

	cp := newChaosProcs(t, exe, dir, reposDir, "--ack-wait", "2s", "--max-deliver", "50", "--backoff", "100ms,500ms,1s", "--step-timeout", "30m")
	natsURL, services, procs, api := cp.natsURL, cp.services, cp.all, cp.api
	startAll(t, procs[1:]...) // the services
	// Every service up and waiting for a NATS server that is not there.
	for _, p := range procs[1:] {
		waitLog(t, ctx, p, "JetStream not available; waiting")
		if !p.running() {
			t.Fatalf("%s exited while NATS was not up: %s", p.name, logTail(p.log, 8))
		}
	}
	startAll(t, cp.nats)
	readyAll(ctx, t, procs...)
	ledgerAPI := api("ledger")
	for i := range prs {
		prs[i].failCI = false
		if err := api("validator").PostStatus(ctx, prs[i].req.Repo, prs[i].req.HeadSHA, "ci", "success"); err != nil {
			t.Fatalf("post status: %v", err)
		}
	}
	repo := prs[0].req.Repo
	paths := []string{"/hooks/w0/" + randomHex(t, 8), "/hooks/w1/" + randomHex(t, 8)}
	var ws []map[string]string
	for _, p := range paths {
		ws = append(ws, map[string]string{"url": receiver.URL + p, "secret": randomHex(t, 16)})
	}
	if err := api("notifier").PutWatchers(ctx, repo, ws); err != nil {
		t.Fatalf("put watchers: %v", err)
	}
	b, err := bus.Connect(ctx, bus.Config{URL: natsURL, Name: "faults-test"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	submit := func(i int) {
		t.Helper()
		publishRequest(ctx, t, b, prs[i].id, "https://forge.faults.test", prs[i].req)
	}
	final := map[int]client.Saga{}
	merged := func(i int) {
		t.Helper()
		wctx, wcancel := context.WithTimeout(ctx, 90*time.Second)
		defer wcancel()
		for {
			s, err := ledgerAPI.Saga(wctx, prs[i].req.PRID)
			if err == nil && s.Terminal() && s.CorrelationID == prs[i].id {
				if s.State != "MERGED" {
					t.Fatalf("%s: %s at %s (%s), want MERGED", prs[i].req.PRID, s.State, s.FailedStep, s.LastError)
				}
				final[i] = s
				return
			}
			select {
			case <-wctx.Done():
				t.Fatalf("%s not MERGED: %+v %v\n%s", prs[i].req.PRID, s, err, crashes(procs))
			case <-time.After(100 * time.Millisecond):
			}
		}
	}

	// The services started before NATS: a saga completes.
	submit(0)
	merged(0)

	for k, fc := range faultCases {
		i := k + 1
		p := services[fc.service]
		// A clean stop, so that the armed start finds nothing left of the
		// previous saga (a relay's rows not yet marked sent would be
		// published again, and fire a relay point before the saga).
		terminate(t, p)
		p.env = []string{fault.Env + "=" + fc.point + "=exit"}
		if fc.holdSecond {
			hooks.mu.Lock()
			hooks.hold, hooks.release = paths[1], make(chan struct{})
			hooks.mu.Unlock()
		}
		startAll(t, p)
		readyAll(ctx, t, p)
		crashesBefore := len(crashes([]*chaosProc{p}))
		submit(i)
		exited(t, ctx, p, fc.point)
		if got := crashes([]*chaosProc{p}); len(got) != crashesBefore+1 || !strings.Contains(got[len(got)-1], fmt.Sprintf("exit status %d", fault.ExitCode)) {
			t.Fatalf("%s: %s exited, not with status %d: %v", fc.point, p.name, fault.ExitCode, got)
		}
		if fc.holdSecond {
			hooks.mu.Lock()
			first, second := len(hooks.ids[paths[0]+"|"+prs[i].id]), hooks.ok[paths[1]+"|"+prs[i].id]
			close(hooks.release)
			hooks.hold = ""
			hooks.mu.Unlock()
			if first == 0 || second != 0 {
				t.Errorf("%s: the round was not cut between watchers (first delivered: %v, second answered %d times)", fc.point, first > 0, second)
			}
		}
		p.env = nil
		startAll(t, p)
		readyAll(ctx, t, p)
		merged(i)
		t.Logf("%s: %s exited with status %d there; restarted, %s MERGED", fc.point, p.name, fault.ExitCode, prs[i].req.PRID)
	}

	waitSettled(t, ctx, b)
	isMerged := map[string]bool{}
	for i, p := range prs {
		s, err := ledgerAPI.Saga(ctx, p.req.PRID)
		if err != nil {
			t.Fatal(err)
		}
		final[i] = s
		isMerged[p.req.PRID] = s.State == "MERGED"
		var got []string
		for _, tr := range s.Transitions {
			got = append(got, string(tr.To))
		}
		if want := "VALIDATING,MERGING,NOTIFYING,INDEXING,MERGED"; strings.Join(got, ",") != want {
			t.Errorf("%s: transitions %v, want %s", p.req.PRID, got, want)
		}
		for _, path := range paths {
			key := path + "|" + p.id
			switch {
			case hooks.ok[key] < 1:
				t.Errorf("%s never delivered to watcher %s", p.req.PRID, path[:9])
			case len(hooks.ids[key]) != 1:
				t.Errorf("%s delivered to watcher %s under %d delivery ids %v", p.req.PRID, path[:9], len(hooks.ids[key]), hooks.ids[key])
			}
		}
	}
	checkTransitionRows(t, filepath.Join(dir, "ledger", "db", "ledger.sqlite"))
	checkMain(t, filepath.Join(reposDir, filepath.FromSlash(repo)+".git"), prs, final, isMerged)
	if n := natstest.Msgs(t, ctx, b, contracts.DLQStream); n != 0 {
		t.Errorf("PRSAGA_DLQ holds %d messages", n)
	}
	t.Logf("fault points: %d armed, each exited its process once; %d sagas MERGED, %d redeliveries", len(faultCases), len(prs), countRedeliveries(t, ctx, b))
}

// terminate stops p with SIGTERM and waits for it to be gone.
func terminate(t *testing.T, p *chaosProc) {
	t.Helper()
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.killed = true
	p.mu.Unlock()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("stop %s: %v", p.name, err)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		p.kill()
		t.Fatalf("%s did not stop within 30s of SIGTERM", p.name)
	}
}

// exited waits for p to exit and checks that it said the point fired.
func exited(t *testing.T, ctx context.Context, p *chaosProc, point string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for p.running() {
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("%s armed at %s did not exit: %s", p.name, point, logTail(p.log, 8))
		}
		time.Sleep(20 * time.Millisecond)
	}
	raw, _ := os.ReadFile(p.log)
	if !strings.Contains(string(raw), "fault point "+point+" fired") {
		t.Fatalf("%s exited, but not at %s: %s", p.name, point, logTail(p.log, 8))
	}
}

// waitLog waits until p's log holds s.
func waitLog(t *testing.T, ctx context.Context, p *chaosProc, s string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		raw, _ := os.ReadFile(p.log)
		if strings.Contains(string(raw), s) {
			return
		}
		if !p.running() || time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("%s: no %q in its log: %s", p.name, s, logTail(p.log, 8))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestFaultPointsListed starts every service in-process and checks that
// each fault point they register is armed by TestFaultPoints and named in
// docs/operating.md: a new consumer or relay gets its crash test and its
// line for the operator.
func TestFaultPointsListed(t *testing.T) {
	startStack(t, testConfig(t))
	doc := readFile(t, filepath.Join("..", "..", "docs", "operating.md"))
	tested := map[string]bool{}
	for _, fc := range faultCases {
		tested[fc.point] = true
	}
	// restore's points, registered once a restore has run in this process,
	// are armed by TestRestoreKilledAtEveryStepThenRunAgain.
	for _, p := range []string{backup.FaultDBMoved, backup.FaultDBCopied, backup.FaultDBCarried,
		backup.FaultIndexMoved, backup.FaultIndexCopied, backup.FaultConsumerDone} {
		tested[p] = true
	}
	points := fault.Points()
	if len(points) < len(faultCases) {
		t.Fatalf("the stack registered %d fault points (%v), fewer than the %d tested", len(points), points, len(faultCases))
	}
	for _, p := range points {
		if !tested[p] {
			t.Errorf("fault point %s is not armed by TestFaultPoints", p)
		}
		name := p
		for _, pattern := range []string{"relay.", ".after-effect", ".after-commit", ".after-publish"} {
			name = strings.Replace(name, pattern, "", 1)
		}
		if !strings.Contains(doc, "`"+name+"`") {
			t.Errorf("fault point %s: %q is not named in docs/operating.md", p, name)
		}
	}
}
