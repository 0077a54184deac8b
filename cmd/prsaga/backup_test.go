package main

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prsaga/prsaga/cmd/prsaga/internal/backup"
	"github.com/prsaga/prsaga/cmd/prsaga/internal/client"
	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/services/indexer/bleveindex"
)

// hookBodies records, per X-Prsaga-Delivery id, the bodies received.
type hookBodies struct {
	mu     sync.Mutex
	bodies map[string]map[string]bool // delivery id -> sha256 of each body
}

func (h *hookBodies) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	sum := sha256.Sum256(body)
	id := r.Header.Get("X-Prsaga-Delivery")
	h.mu.Lock()
	if h.bodies[id] == nil {
		h.bodies[id] = map[string]bool{}
	}
	h.bodies[id][hex.EncodeToString(sum[:])] = true

	h.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

// sagaOutcome is what must not change when a deployment is restored from
// an older backup and catches up.
type sagaOutcome struct {
	State, FailedStep, MergeSHA, CorrelationID string
	Merged                                     bool
	Attempts                                   int
}

func outcomes(t *testing.T, c *client.Client) map[string]sagaOutcome {
	t.Helper()
	out := map[string]sagaOutcome{}
	for _, s := range allSagas(t, c) {
		out[s.PRID] = sagaOutcome{State: string(s.State), FailedStep: string(s.FailedStep), MergeSHA: s.MergeSHA, CorrelationID: s.CorrelationID, Merged: s.Merged, Attempts: s.Attempts}
	}
	return out
}

// Traffic runs; a backup is taken in the middle of it, while requests are
// still being published; the deployment runs on until every saga is
// finished, is stopped, the older backup is restored and the deployment
// started again. Once it has caught up, every saga ends as it had before
// the restore, each PR is merged exactly once (git is the oracle), no
// webhook delivery id came with two different bodies and nothing was
// dead-lettered. The backup itself is consistent: each database copy
// passes integrity_check, and every event at or below a consumer's
// recorded position is in that consumer's inbox in the copy.
func TestBackupUnderLoadThenRestore(t *testing.T) {
	const prs, repos = 120, 4
	cfg := testConfig(t)
	cfg.WebhookAllowPrivate = true
	reqs := prepareRepos(t, cfg.ReposDir, prs, repos)
	for i := range reqs {
		if i%3 == 1 {
			// A squash leaves the PR head out of the target: only the
			// merger's journal recognises it as done.
			reqs[i].Strategy = contracts.StrategySquash
		}
	}
	hooks := &hookBodies{bodies: map[string]map[string]bool{}}
	receiver := httptest.NewServer(hooks)
	t.Cleanup(receiver.Close)

	st := startStack(t, cfg)
	c := client.New(st.URL, "")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for k := 0; k < repos; k++ {
		if err := c.PutWatchers(ctx, repoOf(k), []map[string]string{{"url": receiver.URL + "/hooks/" + repoOf(k), "secret": "s3cret-" + repoOf(k)}}); err != nil {
			t.Fatal(err)
		}
	}
	for i, r := range reqs {
		state := "success"
		if i%10 == 9 {
			state = "failure" // some sagas end MERGE_FAILED at VALIDATING
		}
		setCI(t, c, r.Repo, r.HeadSHA, state)
	}
	terminal := func() int {
		n := 0
		for _, s := range allSagas(t, c) {
			if s.Terminal() {
				n++
			}
		}
		return n
	}

	// The first half, then the backup while the second half is published.
	publishRequests(ctx, t, st.Bus, "https://forge.example/backup", reqs[:prs/2])
	waitCond(t, time.Minute, "a few sagas finished", func() bool { return terminal() >= 10 })
	published := make(chan struct{})
	go func() {
		defer close(published)
		for _, r := range reqs[prs/2:] {
			e, err := contracts.NewRequested(fmt.Sprintf("backup-run-%s", strings.NewReplacer("/", "-", "#", "-").Replace(r.PRID)), "https://forge.example/backup", time.Now(), r, "")
			if err == nil {
				err = st.Bus.Publish(ctx, e)
			}
			if err != nil {
				t.Errorf("publish %s: %v", r.PRID, err)
				return
			}
		}
	}()
	dir := filepath.Join(t.TempDir(), "backup")
	code, out, errOut := runCLI(t, "backup", "--to", dir, "--data", cfg.DataDir, "--nats-url", st.NATS.Addr(), "--api", st.URL, "--json")
	if code != exitOK {
		t.Fatalf("backup: exit %d\n%s%s", code, out, errOut)
	}
	<-published
	var m backup.Manifest
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("backup --json: %v\n%s", err, out)
	}
	if len(m.Databases) != 5 || m.Index == nil || m.Index.Via != "indexer" || len(m.Consumers) < 6 {
		t.Fatalf("manifest: %d databases, index %+v, %d consumers; want all 5 databases, the index copied by the indexer, every consumer", len(m.Databases), m.Index, len(m.Consumers))
	}
	checkBackupConsistent(ctx, t, st.Bus, dir, m)
	if n := finishedIn(t, filepath.Join(dir, "ledger.sqlite"), "'MERGED', 'MERGE_FAILED'"); n >= prs {
		t.Fatalf("the backup's ledger has all %d sagas finished: it was not taken mid-run", n)
	}
	// The index was copied after the ledger: every PR the ledger's copy
	// has MERGED (indexed first) is in the index's copy.
	x, err := bleveindex.Open(filepath.Join(dir, "index"), time.Second)
	if err != nil {
		t.Fatalf("the index's copy does not open: %v", err)
	}
	docs, err := x.Count()
	x.Close()
	if merged := finishedIn(t, filepath.Join(dir, "ledger.sqlite"), "'MERGED'"); err != nil || docs < uint64(merged) || merged == 0 {
		t.Fatalf("the index's copy has %d documents (%v), the ledger's copy %d sagas MERGED: want at least as many, and some", docs, err, merged)
	}

	// Run on to the end; what the deployment says then is the reference.
	waitCond(t, 90*time.Second, "every saga finished", func() bool { return terminal() == prs })
	waitSettled(t, ctx, st.Bus)
	want := outcomes(t, c)
	st.Stop()

	code, out, errOut = runCLI(t, "restore", "--from", dir, "--data", cfg.DataDir, "--json")
	var res backup.Result
	if code != exitOK || json.Unmarshal([]byte(out), &res) != nil {
		t.Fatalf("restore: exit %d\n%s%s", code, out, errOut)
	}
	if res.CarriedOver == 0 || len(res.Reset) != len(m.Consumers) {
		t.Fatalf("restore kept %d journal rows and reset %v, want the merges made since the backup and every consumer", res.CarriedOver, res.Reset)
	}
	st2 := startStack(t, cfg)
	c2 := client.New(st2.URL, "")
	waitSettled(t, ctx, st2.Bus)
	waitCond(t, time.Minute, "every saga as before the restore", func() bool {
		got := outcomes(t, c2)
		if len(got) != len(want) {
			return false
		}
		for pr, w := range want {
			if got[pr] != w {
				return false
			}
		}
		return true
	})
	waitSettled(t, ctx, st2.Bus)
	if got := outcomes(t, c2); len(got) != prs {
		t.Fatalf("after the restore the ledger has %d sagas, want %d", len(got), prs)
	}

	merged := 0
	for _, w := range want {
		if w.Merged {
			merged++
		}
	}
	counts := mainTrailers(t, cfg.ReposDir, repos)
	for pr, w := range want {
		n := counts[pr]
		if (w.Merged && n != 1) || (!w.Merged && n != 0) {
			t.Errorf("%s: %d merge commits on main, want %d (merged: %v)", pr, n, map[bool]int{true: 1}[w.Merged], w.Merged)
		}
	}
	for k := 0; k < repos; k++ {
		inRepo := 0
		for pr, w := range want {
			if w.Merged && strings.HasPrefix(pr, repoOf(k)+"#") {
				inRepo++
			}
		}
		if got := searchRepo(ctx, t, st2.URL, repoOf(k)).Total; got != uint64(inRepo) || inRepo == 0 {
			t.Errorf("after the restore the index has %d PRs of %s, want its %d merged", got, repoOf(k), inRepo)
		}
	}
	hooks.mu.Lock()
	deliveries := len(hooks.bodies)
	for id, bodies := range hooks.bodies {
		if len(bodies) != 1 {
			t.Errorf("delivery id %s came with %d different bodies", id, len(bodies))
		}
	}
	hooks.mu.Unlock()
	if deliveries != merged {
		t.Errorf("%d delivery ids, want one per merged saga (%d)", deliveries, merged)
	}
	// A step handled again after the restore answers under the id it
	// answered with before (step.FollowID): the ledger holds one event per
	// run, type and source.
	rows, err := openCopy(t, filepath.Join(cfg.DataDir, "db", "ledger.sqlite")).Query(
		`SELECT correlation_id, type, json_extract(event, '$.source'), count(*) FROM saga_event GROUP BY 1, 2, 3 HAVING count(*) > 1`)
	if err != nil {
		t.Fatal(err)
	}
	eachRepeated(t, rows, func(corr, typ, source string, n int) {
		t.Errorf("run %s: %d events %s from %s, want one", corr, n, typ, source)
	})
	rows.Close()
	dlq, err := st2.Bus.JS.Stream(ctx, contracts.DLQStream)
	if err != nil {
		t.Fatal(err)
	}
	if info, err := dlq.Info(ctx); err != nil || info.State.Msgs != 0 {
		t.Fatalf("DLQ: %v messages (err %v), want none", info.State.Msgs, err)
	}
}

// checkBackupConsistent checks every database copy with integrity_check
// and that each consumer's recorded ack floor is applied in the copy: the
// id of every event of its subjects at or below it is in its inbox.
func checkBackupConsistent(ctx context.Context, t *testing.T, b *bus.Bus, dir string, m backup.Manifest) {
	t.Helper()
	inbox := map[string]map[string]bool{} // consumer -> event ids
	for _, d := range m.Databases {
		db := openCopy(t, filepath.Join(dir, d.File))
		var ok string
		if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&ok); err != nil || ok != "ok" {
			t.Fatalf("integrity_check of the %s copy: %q %v", d.Service, ok, err)
		}
		rows, err := db.Query(`SELECT consumer, event_id FROM inbox`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var c, id string
			if err := rows.Scan(&c, &id); err != nil {
				t.Fatal(err)
			}
			if inbox[c] == nil {
				inbox[c] = map[string]bool{}
			}
			inbox[c][id] = true
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
	}
	s, err := b.JS.Stream(ctx, contracts.Stream)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, c := range m.Consumers {
		ci, err := b.JS.Consumer(ctx, contracts.Stream, c.Name)
		if err != nil {
			t.Fatal(err)
		}
		filters := ci.CachedInfo().Config.FilterSubjects
		if f := ci.CachedInfo().Config.FilterSubject; f != "" {
			filters = append(filters, f)
		}
		for seq := uint64(1); seq <= c.AckFloor; seq++ {
			msg, err := s.GetMsg(ctx, seq)
			if err != nil {
				t.Fatalf("stream message %d: %v", seq, err)
			}
			if !matchesAny(msg.Subject, filters) {
				continue
			}
			e, err := bus.Decode(msg.Header, msg.Data)
			if err != nil {
				t.Fatalf("message %d: %v", seq, err)
			}
			if !inbox[c.Name][e.ID()] {
				t.Errorf("consumer %s: event %s (sequence %d, at or below its recorded floor %d) is not in the copy's inbox", c.Name, e.ID(), seq, c.AckFloor)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no event at or below any recorded position: the check checked nothing")
	}
}

// eachRepeated calls report with each row of rows, the answer of a
// "SELECT a, b, c, count(*) … GROUP BY 1, 2, 3 HAVING count(*) > 1" over
// three text columns: each is a key recorded more than once.
func eachRepeated(t *testing.T, rows *sql.Rows, report func(a, b, c string, n int)) {
	t.Helper()
	for rows.Next() {
		var a, b, c string
		var n int
		if err := rows.Scan(&a, &b, &c, &n); err != nil {
			t.Fatal(err)
		}
		report(a, b, c, n)
	}
}

func openCopy(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// finishedIn counts the sagas in one of states (SQL string literals) in
// a ledger database.
func finishedIn(t *testing.T, path, states string) int {
	t.Helper()
	var n int
	if err := openCopy(t, path).QueryRow(`SELECT count(*) FROM pr_saga WHERE state IN (` + states + `)`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// matchesAny reports whether subject matches one of the NATS subject
// filters (* one token, > the rest).
func matchesAny(subject string, filters []string) bool {
	for _, f := range filters {
		st, ft := strings.Split(subject, "."), strings.Split(f, ".")
		ok := true
		for i, tok := range ft {
			if tok == ">" {
				ok = len(st) > i
				break
			}
			if i >= len(st) || (tok != "*" && tok != st[i]) {
				ok = false
				break
			}
			if i == len(ft)-1 && len(st) != len(ft) {
				ok = false
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// Restore refuses while the services run, and refuses a backup older than
// the stream keeps, changing nothing; backup and restore refuse a YDB
// store, naming where its procedure is written down.
func TestRestoreRefusals(t *testing.T) {
	cfg := testConfig(t)
	st := startStack(t, cfg)
	dir := filepath.Join(t.TempDir(), "backup")
	if code, out, errOut := runCLI(t, "backup", "--to", dir, "--data", cfg.DataDir, "--nats-url", st.NATS.Addr(), "--api", st.URL); code != exitOK {
		t.Fatalf("backup: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := runCLI(t, "backup", "--to", dir, "--data", cfg.DataDir, "--nats-url", st.NATS.Addr()); code != exitFailed || !strings.Contains(errOut, "not empty") {
		t.Fatalf("backup into a used directory: exit %d %q, want 1 saying it is not empty", code, errOut)
	}
	code, _, errOut := runCLI(t, "restore", "--from", dir, "--data", cfg.DataDir, "--nats-url", st.NATS.Addr())
	if code != exitFailed || !strings.Contains(errOut, "must be stopped") || !strings.Contains(errOut, "ledger database") || !strings.Contains(errOut, "indexer holds") || !strings.Contains(errOut, "pulls waiting") {
		t.Fatalf("restore while running: exit %d\n%s\nwant 1 naming the open databases, the index and the pulling consumers", code, errOut)
	}
	st.Stop()

	// A backup taken longer ago than the stream keeps events.
	m, err := backup.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	m.CreatedAt = m.CreatedAt.Add(-8 * 24 * time.Hour)
	b, _ := json.Marshal(m)
	if err := os.WriteFile(filepath.Join(dir, backup.ManifestFile), b, 0o600); err != nil {
		t.Fatal(err)
	}
	ledgerDB := filepath.Join(cfg.DataDir, "db", "ledger.sqlite")
	before, err := os.Stat(ledgerDB)
	if err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runCLI(t, "restore", "--from", dir, "--data", cfg.DataDir)
	if code != exitFailed || !strings.Contains(errOut, "backup too old") || !strings.Contains(errOut, "PRSAGA_STREAM_MAX_AGE") {
		t.Fatalf("restore of an old backup: exit %d\n%s\nwant 1 saying it is older than the stream keeps", code, errOut)
	}
	if after, err := os.Stat(ledgerDB); err != nil || !os.SameFile(before, after) {
		t.Fatalf("the refused restore replaced the ledger's database (%v)", err)
	}

	for verb, dirFlag := range map[string]string{"backup": "--to", "restore": "--from"} {
		code, _, errOut := runCLI(t, verb, "--store", "ydb://localhost:2136/local", dirFlag, dir)
		if code != exitUsage || !strings.Contains(errOut, "ydb tools dump") || !strings.Contains(errOut, "docs/operating.md") {
			t.Fatalf("%s on YDB: exit %d %q, want 2 pointing to YDB's tools and docs/operating.md", verb, code, errOut)
		}
	}
}

// Every flag of backup and restore is in their --help.
func TestBackupRestoreHelp(t *testing.T) {
	for verb, flags := range map[string][]string{"backup": {"-to", "-timeout", "-json"}, "restore": {"-from", "-force", "-timeout", "-json"}} {
		code, _, out := runCLI(t, verb, "--help") // help goes to stderr
		if code != exitOK || !strings.Contains(out, "docs/operating.md") {
			t.Fatalf("%s --help: exit %d\n%s", verb, code, out)
		}
		for _, f := range flags {
			if !strings.Contains(out, "  "+f+" ") && !strings.Contains(out, "  "+f+"\n") {
				t.Errorf("%s --help does not list %s:\n%s", verb, f, out)
			}
		}
	}
}
