//go:build linux

package main

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/prsaga/prsaga/cmd/prsaga/internal/client"
	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/natsembed/natstest"
	_ "github.com/prsaga/prsaga/platform/sqlite" // registers the "sqlite" driver: the ledger's file is read directly
)

// chaosPR is one saga of the chaos run.
type chaosPR struct {
	req     contracts.Request
	id      string // its requested event's id: the run's correlation id
	failCI  bool   // CI posts failure: MERGE_FAILED at VALIDATING expected
	watched bool   // its repository has watchers
	file    string // the one file it adds
}

// chaosRepos builds W2-style repositories: main with a README, each PR one
// commit adding its own file on the initial commit, all merged into the
// one shared main (so every merge but the first is a real three-way merge
// onto a main that others moved).
func chaosRepos(t *testing.T, reposDir string, n, repos, watched int, run string) []chaosPR {
	t.Helper()
	prs := make([]chaosPR, n)
	for k := 0; k < repos; k++ {
		name := fmt.Sprintf("chaos/r%d", k)
		ours := everyNth(k, n, repos)
		for j, h := range prRepo(t, reposDir, name, ours) {
			i, file := ours[j], prFile(ours[j])
			branch := "pr/" + strconv.Itoa(i)
			strategy := contracts.StrategyMerge
			if i%3 == 2 {
				strategy = contracts.StrategySquash
			}
			prs[i] = chaosPR{
				req: contracts.Request{PRID: contracts.PRID(name, i+1), Repo: name, PRNumber: i + 1, SourceBranch: branch,
					TargetBranch: "main", HeadSHA: h.String(), Strategy: strategy, Title: "Add " + file, RequestedBy: "chaos"},
				id: fmt.Sprintf("chaos-%s-%03d", run, i), failCI: i%10 == 9, watched: k < watched, file: file,
			}
		}
	}
	return prs
}

// webhookLog records what the watchers served by the test received.
type webhookLog struct {
	mu       sync.Mutex
	secrets  map[string]string          // path -> secret
	ids      map[string]map[string]bool // watcher path | correlation id -> delivery ids
	ok       map[string]int             // watcher path | correlation id -> deliveries answered 200
	attempts map[string]int             // delivery id -> requests
	problems []string
}

// ServeHTTP answers the first request of every delivery id 503 (so that
// every delivery is retried) and the others 200, checking the signature.
func (w *webhookLog) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	w.mu.Lock()
	defer w.mu.Unlock()
	secret, ok := w.secrets[r.URL.Path]
	if !ok {
		w.problems = append(w.problems, "request to an unknown path "+r.URL.Path)
		rw.WriteHeader(http.StatusNotFound)
		return
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	if got := r.Header.Get("X-Prsaga-Signature"); got != "sha256="+hex.EncodeToString(mac.Sum(nil)) {
		w.problems = append(w.problems, "bad signature "+got+" on "+r.URL.Path)
	}
	var ev struct {
		Subject       string `json:"subject"`
		CorrelationID string `json:"correlationid"`
	}
	if err := json.Unmarshal(body, &ev); err != nil || ev.CorrelationID == "" {
		w.problems = append(w.problems, fmt.Sprintf("body is not a CloudEvent with a correlation id: %q", body))
	}
	id := r.Header.Get("X-Prsaga-Delivery")
	key := r.URL.Path + "|" + ev.CorrelationID
	if w.ids[key] == nil {
		w.ids[key] = map[string]bool{}
	}
	w.ids[key][id] = true
	w.attempts[id]++
	if w.attempts[id] == 1 {
		rw.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.ok[key]++
	rw.WriteHeader(http.StatusOK)
}

func randomHex(t *testing.T, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// TestChaos runs the services as separate `prsaga serve` processes on one
// `prsaga nats` process and pushes 300 sagas through them (W2-style merges
// into shared mains, some repositories with watchers served here, some PRs
// with failing CI) while SIGKILLing a random service every second or two —
// and the NATS server once — and restarting it. At the end every saga is
// in its expected terminal state, each PR's commit is in its target
// exactly once (no duplicate merge commits), each watcher got each
// delivery at least once and always under one X-Prsaga-Delivery id per
// (run, watcher), no saga_transition row is duplicated, and the DLQ is
// empty. Skipped with -short (make quick): it builds the binary and runs
// for a minute or two.
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and kills processes for a minute or two")
	}
	const (
		sagas           = 300
		repos           = 6
		watchedRepos    = 2
		watchersPerRepo = 2
	)
	seed := uint64(time.Now().UnixNano())
	t.Logf("chaos seed %d", seed)
	rng := mrand.New(mrand.NewPCG(seed, 1))       // the chaos goroutine's
	submitRng := mrand.New(mrand.NewPCG(seed, 2)) // the submitter's
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	dir := t.TempDir()
	if keep := os.Getenv("PRSAGA_TEST_CHAOS_DIR"); keep != "" { // keep the run's logs, databases and repositories
		dir = filepath.Join(keep, time.Now().Format("20060102-150405"))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Logf("chaos run kept in %s", dir)
	}
	exe := buildBinary(t)
	reposDir := filepath.Join(dir, "repos")
	run := randomHex(t, 4)
	prs := chaosRepos(t, reposDir, sagas, repos, watchedRepos, run)

	hooks := &webhookLog{secrets: map[string]string{}, ids: map[string]map[string]bool{}, ok: map[string]int{}, attempts: map[string]int{}}
	receiver := httptest.NewServer(hooks)
	t.Cleanup(receiver.Close) // after the children are gone (cleanups run last first)

	// Short ack wait: a killed consumer's messages come back in 2s. A large
	// delivery budget: a step must not give up because it was killed.
	cp := newChaosProcs(t, exe, dir, reposDir, "--ack-wait", "2s", "--max-deliver", "50", "--backoff", "100ms,500ms,1s", "--step-timeout", "30m",
		"--log-level", "debug", "--log-dir", "")
	natsProc, natsURL, services, names, procs, api := cp.nats, cp.natsURL, cp.services, cp.names, cp.all, cp.api
	startAll(t, natsProc)
	readyAll(ctx, t, natsProc)
	startAll(t, procs[1:]...) // the services
	readyAll(ctx, t, procs...)
	ledgerAPI, validatorAPI, notifierAPI := api("ledger"), api("validator"), api("notifier")

	// CI statuses and watchers, before the chaos.
	for _, p := range prs {
		state := "success"
		if p.failCI {
			state = "failure"
		}
		if err := validatorAPI.PostStatus(ctx, p.req.Repo, p.req.HeadSHA, "ci", state); err != nil {
			t.Fatalf("post status: %v", err)
		}
	}
	var watcherPaths []string
	for k := 0; k < watchedRepos; k++ {
		repo := fmt.Sprintf("chaos/r%d", k)
		var ws []map[string]string
		for w := 0; w < watchersPerRepo; w++ {
			path := fmt.Sprintf("/hooks/r%d/w%d/%s", k, w, randomHex(t, 8))
			secret := randomHex(t, 16)
			hooks.mu.Lock()
			hooks.secrets[path] = secret
			hooks.mu.Unlock()
			watcherPaths = append(watcherPaths, path)
			ws = append(ws, map[string]string{"url": receiver.URL + path, "secret": secret})
		}
		if err := notifierAPI.PutWatchers(ctx, repo, ws); err != nil {
			t.Fatalf("put watchers: %v", err)
		}
	}

	b, err := bus.Connect(ctx, bus.Config{URL: natsURL, Name: "chaos-test"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	// The chaos: a random service killed every 0.2-1.2s, or within 300ms
	// of a burst of requests, and restarted at once; the NATS server killed
	// once, a third of the way through the requests, and restarted a second
	// later.
	var kills, natsKills, supervised atomic.Int64
	stop := make(chan struct{})
	var chaosDone sync.WaitGroup
	published := make(chan int, sagas) // indexes of published requests
	var submitted atomic.Int64
	burst := make(chan struct{}, 1) // a burst of requests was published
	chaosDone.Add(1)
	go func() {
		defer chaosDone.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(200*time.Millisecond + time.Duration(rng.Int64N(int64(time.Second)))):
			case <-burst: // work in flight: kill within the next 300ms
				time.Sleep(time.Duration(rng.Int64N(int64(300 * time.Millisecond))))
			}
			// The supervisor (systemd, Kubernetes): a service that exited on
			// its own is started again (none should: a service started
			// while NATS is down waits for it; checked at the end).
			for _, name := range names {
				if p := services[name]; !p.running() {
					if err := p.start(); err != nil {
						t.Errorf("restart %s: %v", p.name, err)
						return
					}
					supervised.Add(1)
				}
			}
			if natsKills.Load() == 0 && submitted.Load() >= sagas/3 {
				natsProc.kill()
				natsKills.Add(1)
				time.Sleep(time.Second)
				if err := natsProc.start(); err != nil {
					t.Errorf("restart NATS: %v", err)
					return
				}
				if err := natsProc.waitReady(ctx); err != nil {
					t.Errorf("restart NATS: %v", err)
					return
				}
				continue
			}
			p := services[names[rng.IntN(len(names))]]
			p.kill()
			kills.Add(1)
			time.Sleep(time.Duration(rng.Int64N(int64(300 * time.Millisecond))))
			if err := p.start(); err != nil {
				t.Errorf("restart %s: %v", p.name, err)
				return
			}
		}
	}()
	// No operator step: a merger killed while holding refs/heads/<b>.lock
	// leaves it, and the next merge into that branch breaks it once it sees
	// the holder recorded in it is dead (gitrepo's reflock); a lock that
	// stayed would fail its sagas with retries_exhausted below.
	stopChaos := sync.OnceFunc(func() { close(stop); chaosDone.Wait() })
	defer stopChaos()

	// The requests: published straight to JetStream with stable ids, a
	// failed publish (NATS down) retried under the same id.
	var submitting sync.WaitGroup
	submitting.Add(1)
	defer func() { cancel(); submitting.Wait() }()
	go func() {
		defer submitting.Done()
		defer close(published)
		for _, i := range submitRng.Perm(sagas) {
			p := prs[i]
			e, err := contracts.NewRequested(p.id, "https://forge.chaos.test", time.Now(), p.req, "")
			if err != nil {
				t.Errorf("build request: %v", err)
				return
			}
			for {
				pctx, pcancel := context.WithTimeout(ctx, 3*time.Second)
				err := b.Publish(pctx, e)
				pcancel()
				if err == nil {
					break
				}
				if ctx.Err() != nil {
					return // the test has failed or ended
				}
				time.Sleep(200 * time.Millisecond)
			}
			// Bursts of about ten, so that the services are busy — and
			// a kill finds work in flight — most of the time.
			published <- i
			if submitted.Add(1)%10 == 0 {
				select {
				case burst <- struct{}{}:
				default:
				}
				time.Sleep(time.Second + time.Duration(submitRng.Int64N(int64(time.Second))))
			}
		}
	}()

	// Wait until every saga is terminal (the ledger answers between its
	// deaths).
	final := make(map[int]client.Saga, sagas)
	pending := map[int]bool{}
	lastProgress := time.Now()
	for len(final) < sagas {
		for drained := false; !drained; {
			select {
			case i, ok := <-published:
				if ok {
					pending[i] = true
				} else {
					published = nil
				}
			default:
				drained = true
			}
		}
		for i := range pending {
			s, err := ledgerAPI.Saga(ctx, prs[i].req.PRID)
			if err == nil && s.Terminal() && s.CorrelationID == prs[i].id {
				final[i] = s
				delete(pending, i)
				lastProgress = time.Now()
			}
		}
		if ctx.Err() != nil || time.Since(lastProgress) > 3*time.Minute {
			var stuck []string
			for i := range pending {
				s, _ := ledgerAPI.Saga(context.Background(), prs[i].req.PRID)
				stuck = append(stuck, fmt.Sprintf("%s=%s(%s)", prs[i].req.PRID, s.State, s.LastError))
				if len(stuck) == 10 {
					break
				}
			}
			t.Fatalf("%d of %d sagas terminal after %d kills; not: %v\ncrashes: %v", len(final), sagas, kills.Load(), stuck, crashes(procs))
		}
		time.Sleep(500 * time.Millisecond)
	}
	stopChaos()

	// Every process back up, and everything delivered settled, before the
	// world is checked.
	upAll(ctx, t, procs...)
	// No service exits on its own, not even one started while NATS was
	// down: it waits for the server.
	for _, c := range crashes(procs) {
		t.Errorf("a process exited without being killed: %s", c)
	}
	waitSettled(t, ctx, b)
	// Every lock a killed merger left was broken by the redelivered merge
	// into that branch.
	_ = filepath.WalkDir(reposDir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".lock") {
			t.Errorf("ref lock left behind: %s", path)
		}
		return nil
	})

	// 1. Every saga in its expected terminal state, with one transition per
	// state it went through, none twice.
	merged := map[string]bool{}
	for i, p := range prs {
		s, err := ledgerAPI.Saga(ctx, p.req.PRID)
		if err != nil {
			t.Fatalf("saga %s: %v", p.req.PRID, err)
		}
		final[i] = s
		want := []string{"VALIDATING", "MERGING", "NOTIFYING", "INDEXING", "MERGED"}
		switch {
		case p.failCI:
			want = []string{"VALIDATING", "MERGE_FAILED"}
			if s.State != "MERGE_FAILED" || s.FailedStep != "VALIDATING" || s.Merged || !strings.Contains(s.LastError, contracts.CodeChecksFailed) {
				t.Errorf("%s (CI failed): %s at %s merged=%v %q, want MERGE_FAILED at VALIDATING, checks_failed", p.req.PRID, s.State, s.FailedStep, s.Merged, s.LastError)
			}
		case s.State != "MERGED" || !s.Merged || s.MergeSHA == "":
			t.Errorf("%s: %s at %s (%q), want MERGED", p.req.PRID, s.State, s.FailedStep, s.LastError)
		default:
			merged[p.req.PRID] = true
		}
		if s.CorrelationID != p.id {
			t.Errorf("%s: run %s, want %s", p.req.PRID, s.CorrelationID, p.id)
		}
		var got []string
		for _, tr := range s.Transitions {
			got = append(got, string(tr.To))
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s: transitions to %v, want %v", p.req.PRID, got, want)
		}
	}
	checkTransitionRows(t, filepath.Join(dir, "ledger", "db", "ledger.sqlite"))

	// 2. Each PR's commit in its target exactly once.
	for k := 0; k < repos; k++ {
		checkMain(t, filepath.Join(reposDir, "chaos", "r"+strconv.Itoa(k)+".git"), prs, final, merged)
	}

	// 3. Each watcher got each delivery at least once, under one id.
	hooks.mu.Lock()
	repeats := 0
	for _, n := range hooks.attempts {
		repeats += max(0, n-2) // 2: the refused first request and the answered one
	}
	for i, p := range prs {
		if !p.watched {
			continue
		}
		for _, path := range watcherPaths {
			if !strings.HasPrefix(path, "/hooks/r"+strings.TrimPrefix(p.req.Repo, "chaos/r")+"/") {
				continue
			}
			key := path + "|" + p.id
			switch {
			case !merged[p.req.PRID] && len(hooks.ids[key]) > 0:
				t.Errorf("%s (not merged) was delivered to %s", p.req.PRID, path)
			case merged[p.req.PRID] && hooks.ok[key] < 1:
				t.Errorf("%s (%s) never delivered to %s", p.req.PRID, final[i].State, path)
			case len(hooks.ids[key]) > 1:
				t.Errorf("%s delivered to %s under %d delivery ids %v", p.req.PRID, path, len(hooks.ids[key]), hooks.ids[key])
			}
		}
	}
	for _, pr := range hooks.problems {
		t.Errorf("webhook: %s", pr)
	}
	hooks.mu.Unlock()

	// 4. Nothing dead-lettered.
	if n := natstest.Msgs(t, ctx, b, contracts.DLQStream); n != 0 {
		code, out, _ := runCLIEnv(t, map[string]string{"PRSAGA_NATS_URL": natsURL}, "dlq", "list")
		t.Errorf("PRSAGA_DLQ holds %d messages (dlq list: %d)\n%s", n, code, out)
	}

	redeliveries := countRedeliveries(t, ctx, b)
	dupes := 0
	for _, name := range names {
		raw, _ := os.ReadFile(services[name].log)
		dupes += strings.Count(string(raw), `"msg":"duplicate delivery dropped`)
	}
	t.Logf("chaos: %d sagas (%d merged, %d failed CI as expected), %d service kills, %d NATS kill, %d supervisor restarts, %d redeliveries, %d duplicates dropped by inboxes, %d repeated webhook requests",
		sagas, len(merged), sagas-len(merged), kills.Load(), natsKills.Load(), supervised.Load(), redeliveries, dupes, repeats)
}

func crashes(ps []*chaosProc) []string {
	var out []string
	for _, p := range ps {
		p.mu.Lock()
		for _, c := range p.crashes {
			out = append(out, p.name+": "+c)
		}
		p.mu.Unlock()
	}
	return out
}

// countRedeliveries is, summed over the durable consumers, how many
// deliveries they made beyond one per message of their subjects (the
// server's count; a NATS crash may lose a few).
func countRedeliveries(t *testing.T, ctx context.Context, b *bus.Bus) int64 {
	t.Helper()
	s, err := b.JS.Stream(ctx, contracts.Stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(">"))
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for c := range consumers(t, ctx, b) {
		filters := c.Config.FilterSubjects
		if c.Config.FilterSubject != "" {
			filters = append(filters, c.Config.FilterSubject)
		}
		var msgs uint64
		for subj, n := range info.State.Subjects {
			for _, f := range filters {
				if subjectMatches(f, subj) {
					msgs += n
					break
				}
			}
		}
		if d := int64(c.Delivered.Consumer) - int64(msgs); d > 0 {
			total += d
		}
	}
	return total
}

// subjectMatches matches a NATS subject against a filter with * and >.
func subjectMatches(filter, subject string) bool {
	f, s := strings.Split(filter, "."), strings.Split(subject, ".")
	for i, tok := range f {
		if tok == ">" {
			return len(s) > i
		}
		if i >= len(s) || (tok != "*" && tok != s[i]) {
			return false
		}
	}
	return len(f) == len(s)
}

// checkTransitionRows reads the ledger's saga_transition table: no
// transition recorded twice (same PR, target state and event).
func checkTransitionRows(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT pr_id, to_state, event_id, COUNT(*) FROM saga_transition
		GROUP BY pr_id, to_state, event_id HAVING COUNT(*) > 1`)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	defer rows.Close()
	eachRepeated(t, rows, func(pr, to, ev string, n int) {
		t.Errorf("saga_transition: %s -> %s by %s recorded %d times", pr, to, ev, n)
	})
	var total, distinct int
	if err := db.QueryRow(`SELECT COUNT(*), COUNT(DISTINCT pr_id || '/' || seq) FROM saga_transition`).Scan(&total, &distinct); err != nil {
		t.Fatal(err)
	}
	if total != distinct {
		t.Errorf("saga_transition: %d rows, %d distinct (pr_id, seq)", total, distinct)
	}
}

// checkMain reads a repository's main: exactly one commit carrying each
// merged PR's trailer (its merge sha), none for the others, no PR head
// merged twice, and every merged PR's file in the tree.
func checkMain(t *testing.T, gitDir string, prs []chaosPR, final map[int]client.Saga, merged map[string]bool) {
	t.Helper()
	out, err := exec.Command("git", "--git-dir", gitDir, "log", "--first-parent", "--format=%H%x1f%P%x1f%B%x1e", "main").Output()
	if err != nil {
		t.Fatalf("git log %s: %v", gitDir, err)
	}
	byPR := map[string][]string{}
	secondParents := map[string]int{}
	commits := 0
	for _, rec := range strings.Split(string(out), "\x1e") {
		rec = strings.TrimSpace(rec)
		if rec == "" {
			continue
		}
		commits++
		f := strings.SplitN(rec, "\x1f", 3)
		if len(f) != 3 {
			t.Fatalf("git log record %q", rec)
		}
		if parents := strings.Fields(f[1]); len(parents) == 2 {
			secondParents[parents[1]]++
		}
		for _, line := range strings.Split(f[2], "\n") {
			if pr, ok := strings.CutPrefix(strings.TrimSpace(line), "Prsaga-PR: "); ok {
				byPR[pr] = append(byPR[pr], f[0])
			}
		}
	}
	tree, err := exec.Command("git", "--git-dir", gitDir, "ls-tree", "--name-only", "main").Output()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]bool{}
	for _, f := range strings.Fields(string(tree)) {
		files[f] = true
	}
	want := 1 // the initial commit
	for i, p := range prs {
		if !strings.HasSuffix(gitDir, filepath.FromSlash(p.req.Repo)+".git") {
			continue
		}
		got := byPR[p.req.PRID]
		switch {
		case merged[p.req.PRID]:
			want++
			if len(got) != 1 || got[0] != final[i].MergeSHA {
				t.Errorf("%s: commits with its trailer on main %v, want exactly the merge %s", p.req.PRID, got, final[i].MergeSHA)
			}
			if !files[p.file] {
				t.Errorf("%s: %s is not on main", p.req.PRID, p.file)
			}
			if n := secondParents[p.req.HeadSHA]; n > 1 {
				t.Errorf("%s: its head is merged %d times", p.req.PRID, n)
			}
		default:
			if len(got) != 0 || files[p.file] {
				t.Errorf("%s (not merged): commits %v on main, file present %v", p.req.PRID, got, files[p.file])
			}
		}
	}
	if commits != want {
		t.Errorf("%s: main has %d commits, want %d (the initial one and one per merged PR)", gitDir, commits, want)
	}
}
