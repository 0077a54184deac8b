package server_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/gittest"
	"github.com/prsaga/prsaga/platform/natsembed/natstest"
	"github.com/prsaga/prsaga/platform/service"
	"github.com/prsaga/prsaga/platform/sqlite/sqlitetest"
	"github.com/prsaga/prsaga/services/indexer/server"
)

const wait = 15 * time.Second

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func at(min int) time.Time { return t0.Add(time.Duration(min) * time.Minute) }

type harness struct {
	t    *testing.T
	bus  *bus.Bus
	srv  *server.Server
	http *httptest.Server
}

// start builds an indexer over reposDir and runs its consumer.
func start(t *testing.T, reposDir string) *harness {
	t.Helper()
	h := build(t, bus.Config{AckWait: 5 * time.Second}, server.Options{DB: sqlitetest.Open(t), ReposDir: reposDir})
	log := slog.New(slog.NewJSONHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	h.run(log, service.Options{Backoff: []time.Duration{100 * time.Millisecond}, RelayPoll: 100 * time.Millisecond})
	return h
}

// build builds an indexer on its own bus (opts' IndexDir and LockTimeout
// are set here) and serves its search route, without running its consumer.
func build(t *testing.T, cfg bus.Config, opts server.Options) *harness {
	t.Helper()
	_, b := natstest.Start(t, cfg)
	opts.IndexDir, opts.LockTimeout = filepath.Join(t.TempDir(), "index"), time.Second
	srv, err := server.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	mux := http.NewServeMux()
	srv.Routes(mux)
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	return &harness{t: t, bus: b, srv: srv, http: hs}
}

// run runs the indexer's consumer until the test ends.
func (h *harness) run(log *slog.Logger, opts service.Options) {
	h.t.Helper()
	run, err := service.Start(context.Background(), h.srv.Spec(), h.bus, log, opts)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(run.Stop) // before srv.Close: cleanups run last-in first-out
}

// pr is one merged PR to publish a notified event for.
type pr struct {
	repo     string
	n        int
	title    string
	author   string
	strategy string
	sha      string
	paths    []string
}

func (p pr) id() string { return contracts.PRID(p.repo, p.n) }

// notified publishes the notifier's notified event of p in run corr, or the
// ledger's replay of it (attempt > 1), and returns it.
func (h *harness) notified(p pr, corr string, attempt int) *event.Event {
	h.t.Helper()
	req := contracts.Request{PRID: p.id(), Repo: p.repo, PRNumber: p.n, SourceBranch: "pr/" + strconv.Itoa(p.n), TargetBranch: "main",
		HeadSHA: p.sha, Strategy: p.strategy, Title: p.title, RequestedBy: p.author}
	meta := contracts.Meta{CorrelationID: corr, CausationID: corr + ".m", Attempt: attempt}
	id, source := corr+".n", contracts.Source(contracts.ServiceNotifier)
	if attempt > 1 {
		id, source, meta.ReplayOf = corr+".n.replay"+strconv.Itoa(attempt), contracts.SourceLedger, corr+".n"
	}
	e, err := contracts.New(id, contracts.TypeNotified, source, req.PRID, time.Now(),
		contracts.Notified{Request: req, MergeSHA: p.sha, ChangedPaths: p.paths, Deliveries: []contracts.Delivery{}}, meta)
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := h.bus.Publish(ctx, e); err != nil {
		h.t.Fatal(err)
	}
	return e
}

// indexed waits for the indexer's answer to cause.
func (h *harness) indexed(cause *event.Event) *contracts.Indexed {
	h.t.Helper()
	e := natstest.WaitEvent(h.t, h.bus, contracts.SubjectIndexed, wait, func(e *event.Event) bool {
		env, err := contracts.Open(e)
		return err == nil && env.Meta.CausationID == cause.ID()
	})
	env, err := contracts.Open(e)
	if err != nil {
		h.t.Fatal(err)
	}
	want, _ := contracts.MetaOf(cause)
	if env.Meta.CorrelationID != want.CorrelationID || env.Meta.Attempt != want.Attempt {
		h.t.Errorf("indexed meta = %+v; want correlation %s, attempt %d", env.Meta, want.CorrelationID, want.Attempt)
	}
	return env.Payload.(*contracts.Indexed)
}

type hit struct {
	PRID       string              `json:"pr_id"`
	Repo       string              `json:"repo"`
	Title      string              `json:"title"`
	Author     string              `json:"requested_by"`
	MergeSHA   string              `json:"merge_sha"`
	MergedAt   *time.Time          `json:"merged_at"`
	Highlights map[string][]string `json:"highlights"`
}

type answer struct {
	Total uint64 `json:"total"`
	Hits  []hit  `json:"hits"`
	Error string `json:"error"`
}

func (h *harness) search(params url.Values) (int, answer) {
	h.t.Helper()
	resp, err := h.http.Client().Get(h.http.URL + "/api/v1/search?" + params.Encode())
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var a answer
	if err := json.Unmarshal(raw, &a); err != nil {
		h.t.Fatalf("search %s: answer %d is not JSON: %q", params.Encode(), resp.StatusCode, raw)
	}
	return resp.StatusCode, a
}

// ids searches and returns the hits' PR ids, sorted.
func (h *harness) ids(q, repo string) []string {
	h.t.Helper()
	p := url.Values{"q": {q}}
	if repo != "" {
		p.Set("repo", repo)
	}
	code, a := h.search(p)
	if code != http.StatusOK {
		h.t.Fatalf("search %s = %d %s", p.Encode(), code, a.Error)
	}
	out := []string{}
	for _, x := range a.Hits {
		out = append(out, x.PRID)
	}
	slices.Sort(out)
	return out
}

// TestSearchAfterMergedPRs indexes five merged PRs the way the saga does —
// notified events on JetStream — and searches them over HTTP: by title
// word, path, commit message, author and repo; then replays the index step
// of one and finds one document per PR still.
func TestSearchAfterMergedPRs(t *testing.T) {
	repos := t.TempDir()
	w := gittest.NewBare(t, repos, "acme/widgets",
		gittest.Commit{Name: "base", Branch: "main", Message: "Initial import of gizmo", At: at(0), Files: map[string]string{"README.md": "hi"}},
		// PR 1: a merge commit of two branch commits.
		gittest.Commit{Name: "f1a", Branch: "pr/1", Parents: []string{"base"}, Message: "Handle expired tokens", At: at(1)},
		gittest.Commit{Name: "f1b", Branch: "pr/1", Parents: []string{"f1a"}, Message: "Test the refresh path", At: at(2)},
		gittest.Commit{Name: "m1", Branch: "main", Parents: []string{"base", "f1b"}, Message: "Merge pull request #1 from pr/1\n\nPrsaga-PR: acme/widgets#1", At: at(3)},
		// PR 2: squashed.
		gittest.Commit{Name: "s2", Branch: "main", Parents: []string{"m1"}, Message: "Add a dashboard (#2)\n\n* Render the quartz dashboard", At: at(4)},
		// PR 3: fast-forwarded.
		gittest.Commit{Name: "f3", Branch: "main", Parents: []string{"s2"}, Message: "Document the zephyr flag", At: at(5)},
	)
	g := gittest.NewBare(t, repos, "acme/gadgets",
		gittest.Commit{Name: "base", Branch: "main", Message: "gadgets base", At: at(0)},
		gittest.Commit{Name: "s7", Branch: "main", Parents: []string{"base"}, Message: "Fix the widgets page (#7)", At: at(6)},
	)
	prs := []pr{
		{"acme/widgets", 1, "Fix the token refresh", "alice", "merge", w.SHA["m1"], []string{"internal/auth/token.go"}},
		{"acme/widgets", 2, "Add a dashboard", "bob", "squash", w.SHA["s2"], []string{"web/dashboard.tsx"}},
		{"acme/widgets", 3, "Document flags", "carol", "fast-forward", w.SHA["f3"], []string{"docs/flags.md"}},
		{"acme/gadgets", 7, "Fix the widgets page", "dave", "squash", g.SHA["s7"], []string{"web/pages/widgets.tsx"}},
		// No repository: indexed without commit messages.
		{"acme/missing", 9, "Rename the sprocket", "erin", "merge", strings.Repeat("ab", 20), []string{"sprocket.go"}},
	}
	h := start(t, repos)
	var events []*event.Event
	for i, p := range prs {
		events = append(events, h.notified(p, "run"+strconv.Itoa(i), 1))
	}
	for i, e := range events {
		if got := h.indexed(e); got.Documents != 1 || got.MergeSHA != prs[i].sha || got.PRID != prs[i].id() {
			t.Errorf("indexed %+v; want 1 document of %s at %s", got, prs[i].id(), prs[i].sha)
		}
	}

	w1, w2, w3, g7, m9 := "acme/widgets#1", "acme/widgets#2", "acme/widgets#3", "acme/gadgets#7", "acme/missing#9"
	for _, tc := range []struct {
		q, repo string
		want    []string
	}{
		{"refresh", "", []string{w1}},                   // a title word (and a commit's)
		{"title:dashboard", "", []string{w2}},           // a title word, by field
		{"fix", "", []string{g7, w1}},                   // titles in two repos
		{"fix", "acme/widgets", []string{w1}},           // ... one repo
		{"auth", "", []string{w1}},                      // a path component
		{"changed_paths:widgets", "", []string{g7}},     // a path, by field
		{"sprocket.go", "", []string{m9}},               // a path, whole
		{"expired", "", []string{w1}},                   // a commit of the merged branch
		{"quartz", "", []string{w2}},                    // the squash commit's message
		{"zephyr", "", []string{w3}},                    // the fast-forwarded commit
		{"gizmo", "", []string{}},                       // the target's own history is not the PR's
		{"requested_by:carol", "", []string{w3}},        // the author
		{"repo:acme/widgets", "", []string{w1, w2, w3}}, // a repo, in the query
		{"", "acme/widgets", []string{w1, w2, w3}},      // a repo, as the filter
		{"merge_sha:" + w.SHA["m1"], "", []string{w1}},  // the merge sha
		{"target_branch:main -repo:acme/widgets", "", []string{g7, m9}},
	} {
		if got := h.ids(tc.q, tc.repo); !slices.Equal(got, tc.want) {
			t.Errorf("search q=%q repo=%q = %v; want %v", tc.q, tc.repo, got, tc.want)
		}
	}

	// A hit: its fields, the merge commit's time, highlights (bleve shows
	// the best fragment of each field).
	_, a := h.search(url.Values{"q": {"expired refresh"}, "repo": {"acme/widgets"}})
	if len(a.Hits) != 1 {
		t.Fatalf("search expired refresh = %+v; want one hit", a)
	}
	x := a.Hits[0]
	if x.PRID != w1 || x.Repo != "acme/widgets" || x.Title != "Fix the token refresh" || x.Author != "alice" || x.MergeSHA != w.SHA["m1"] ||
		x.MergedAt == nil || !x.MergedAt.Equal(at(3)) {
		t.Errorf("hit = %+v; want %s by alice at %s, merged at %s", x, w1, w.SHA["m1"], at(3))
	}
	if f := x.Highlights["title"]; len(f) == 0 || !strings.Contains(f[0], "<mark>refresh</mark>") {
		t.Errorf("title highlights = %q; want refresh marked", f)
	}
	if f := x.Highlights["messages"]; len(f) != 1 || !strings.Contains(f[0], "<mark>") {
		t.Errorf("message highlights = %q; want a fragment with a match marked", f)
	}
	if _, a := h.search(url.Values{"q": {"messages:expired"}}); len(a.Hits) != 1 ||
		!slices.Equal(a.Hits[0].Highlights["messages"], []string{"Handle <mark>expired</mark> tokens"}) {
		t.Errorf("search messages:expired = %+v; want %s with the commit message highlighted", a.Hits, w1)
	}

	// Replaying the index step (the ledger's retry) re-indexes, never duplicates.
	replay := h.notified(prs[0], "run0", 2)
	h.indexed(replay)
	if _, a := h.search(url.Values{"repo": {"acme/widgets"}, "limit": {"100"}}); a.Total != 3 {
		t.Errorf("acme/widgets holds %d documents after the replay, want 3", a.Total)
	}
	if _, a := h.search(url.Values{"q": {"pr_id:acme/widgets#1"}}); a.Total != 1 {
		t.Errorf("%s has %d documents after the replay, want 1", w1, a.Total)
	}
	if err := h.srv.Ready(); err != nil {
		t.Errorf("Ready = %v", err)
	}
}

func TestSearchRefusesBadParameters(t *testing.T) {
	h := start(t, t.TempDir())
	for _, p := range []url.Values{
		{},                                    // nothing to search
		{"q": {`"unterminated`}},              // syntax
		{"q": {"x"}, "repo": {"../etc"}},      // a repo that is no repo id
		{"q": {"x"}, "limit": {"0"}},          // limits
		{"q": {"x"}, "limit": {"1001"}},       //
		{"q": {"x"}, "limit": {"ten"}},        //
		{"q": {strings.Repeat("word ", 300)}}, // too long
	} {
		if code, a := h.search(p); code != http.StatusBadRequest || a.Error == "" {
			t.Errorf("search %s = %d %q; want 400 with an error", p.Encode(), code, a.Error)
		}
	}
}

func TestReadyAndClose(t *testing.T) {
	h := start(t, "")
	if err := h.srv.Ready(); err != nil {
		t.Fatalf("Ready = %v", err)
	}
	if err := h.srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := h.srv.Ready(); err == nil {
		t.Error("Ready after Close = nil, want an error")
	}
	if code, _ := h.search(url.Values{"q": {"x"}}); code != http.StatusServiceUnavailable {
		t.Errorf("search after Close = %d, want 503", code)
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	_, err := server.New(server.Options{LockTimeout: -1})
	for _, want := range []string{"DB is required", "IndexDir is required", "LockTimeout"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("New(bad options) = %v; want an error mentioning %q", err, want)
		}
	}
}

// TestSecondIndexerIsAStandby: a second instance on the same index does
// not fail at start: it waits as a standby, not ready and saying why, and
// becomes active when the first stops.
func TestSecondIndexerIsAStandby(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "index")
	first, err := server.New(server.Options{DB: sqlitetest.Open(t), IndexDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	second, err := server.New(server.Options{DB: sqlitetest.Open(t), IndexDir: dir, LockTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("second New on the same index = %v; want a standby", err)
	}
	defer second.Close()
	if err := second.Ready(); err == nil || !strings.HasPrefix(err.Error(), "standby: index "+dir+" held by another indexer") {
		t.Errorf("the standby's Ready = %v; want it saying it is a standby and who holds the index", err)
	}
	if !first.Active() || second.Active() {
		t.Fatalf("active: first %v, second %v; want only the first", first.Active(), second.Active())
	}
	done := make(chan error, 1)
	go func() { done <- second.AwaitActive(context.Background()) }()
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("AwaitActive after the first stopped: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the standby did not take over")
	}
	if err := second.Ready(); err != nil {
		t.Errorf("Ready after the takeover = %v", err)
	}
}
