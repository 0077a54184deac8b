package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/httpx"
	psqlite "github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/platform/sqlite/sqlitetest"
	"github.com/prsaga/prsaga/platform/store/emitted"
	"github.com/prsaga/prsaga/services/ledger"
	"github.com/prsaga/prsaga/services/ledger/httpapi"
	ledgersqlite "github.com/prsaga/prsaga/services/ledger/sqlite"
)

const (
	headSHA  = "1111111111111111111111111111111111111111"
	mergeSHA = "3333333333333333333333333333333333333333"
	merged   = "acme/widgets#42"
	failed   = "acme/widgets#7"
	inflight = "other/repo#1"
	hostile  = "<script>alert(1)</script>"
)

// now is the API's clock; the seeded sagas are stamped after it.
var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

type fixture struct {
	t     *testing.T
	db    *psqlite.DB
	srv   *httptest.Server
	clock *atomicClock
}

// atomicClock is the API's clock; tests move it between requests.
type atomicClock struct{ us atomic.Int64 }

func (c *atomicClock) Now() time.Time      { return time.UnixMicro(c.us.Load()).UTC() }
func (c *atomicClock) Set(t time.Time)     { c.us.Store(t.UnixMicro()) }
func (c *atomicClock) Add(d time.Duration) { c.us.Add(d.Microseconds()) }

func newFixture(t *testing.T, tokens httpx.Tokens, names ...string) *fixture {
	return newFixtureWith(t, func(a *httpapi.API) { a.Tokens, a.TokenNames = tokens, names })
}

// newFixtureWith lets tune set the API's tokens before its routes.
func newFixtureWith(t *testing.T, tune func(*httpapi.API)) *fixture {
	db := sqlitetest.Open(t, ledgersqlite.Migrations)
	store := ledgersqlite.NewStore(db)
	clock := &atomicClock{}
	clock.Set(now)
	api := newAPI(store, clock.Now)
	tune(api)
	mux := http.NewServeMux()
	api.Routes(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	f := &fixture{t: t, db: db, srv: srv, clock: clock}
	f.seed(store)
	return f
}

func request(pr string) contracts.Request {
	repo, n, _ := contracts.ParsePRID(pr)
	return contracts.Request{PRID: pr, Repo: repo, PRNumber: n, SourceBranch: "feature", TargetBranch: "main",
		HeadSHA: headSHA, Strategy: contracts.StrategySquash, Title: "t", RequestedBy: hostile}
}

// seed projects three sagas: one merged, one failed at VALIDATING, one in
// flight; then empties the outbox so tests see only what they add.
func (f *fixture) seed(store *ledger.Store) {
	t := f.t
	at := now
	proj := &ledger.Projector{Now: func() time.Time { at = at.Add(time.Second); return at }}
	apply := func(e *event.Event) { project(t, store, proj, e) }
	for _, pr := range []string{merged, failed, inflight} {
		r := request(pr)
		req := requested(t, r)
		apply(req)
		switch pr {
		case merged:
			apply(follow(t, req, contracts.TypeMergeValidated, contracts.ServiceValidator, contracts.Validated{Request: r}))
			apply(follow(t, req, contracts.TypeMerged, contracts.ServiceMerger, contracts.Merged{Request: r, MergeSHA: mergeSHA}))
			apply(follow(t, req, contracts.TypeNotified, contracts.ServiceNotifier, contracts.Notified{Request: r, MergeSHA: mergeSHA}))
			apply(follow(t, req, contracts.TypeIndexed, contracts.ServiceIndexer, contracts.Indexed{Request: r, MergeSHA: mergeSHA}))
		case failed:
			apply(follow(t, req, contracts.TypeStepFailed, contracts.ServiceValidator,
				contracts.StepFailed{Request: r, Step: contracts.StateValidating, Code: contracts.CodeChecksFailed, Reason: "ci is red"}))
		}
	}
	rows, err := f.db.Unsent(context.Background(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	if err := f.db.MarkSent(context.Background(), ids); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) do(method, path string, body io.Reader, header ...string) (*http.Response, []byte) {
	f.t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+path, body)
	if err != nil {
		f.t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return f.send(req)
}

func (f *fixture) send(req *http.Request) (*http.Response, []byte) {
	f.t.Helper()
	resp, err := f.srv.Client().Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	return resp, b
}

func (f *fixture) getJSON(path string, want int, v any) {
	f.t.Helper()
	resp, b := f.do("GET", path, nil)
	if resp.StatusCode != want {
		f.t.Fatalf("GET %s: %d %s, want %d", path, resp.StatusCode, b, want)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		f.t.Fatalf("GET %s: Content-Type %q", path, ct)
	}
	if err := json.Unmarshal(b, v); err != nil {
		f.t.Fatalf("GET %s: %v in %s", path, err, b)
	}
}

func sagaPath(pr string) string { return "/api/v1/sagas/" + url.PathEscape(pr) }

func TestGetSagaByEscapedID(t *testing.T) {
	f := newFixture(t, nil)
	if p := sagaPath(merged); p != "/api/v1/sagas/acme%2Fwidgets%2342" {
		t.Fatalf("escaped path %s", p)
	}
	var s map[string]any
	f.getJSON(sagaPath(merged), http.StatusOK, &s)
	for _, k := range []string{"pr_id", "repo", "state", "failed_step", "last_error", "attempts", "merge_sha", "merged",
		"correlation_id", "created_at", "updated_at", "transitions"} {
		if _, ok := s[k]; !ok {
			t.Errorf("saga JSON lacks %q: %v", k, s)
		}
	}
	if s["pr_id"] != merged || s["state"] != "MERGED" || s["merged"] != true || s["merge_sha"] != mergeSHA || s["repo"] != "acme/widgets" {
		t.Fatalf("saga = %v, want %s MERGED and merged", s, merged)
	}
	ts := s["transitions"].([]any)
	if len(ts) != 5 {
		t.Fatalf("%d transitions, want 5", len(ts))
	}
	for _, k := range []string{"seq", "from_state", "to_state", "reason", "event_id", "inferred", "at"} {
		if _, ok := ts[0].(map[string]any)[k]; !ok {
			t.Errorf("transition JSON lacks %q: %v", k, ts[0])
		}
	}

	var evs struct {
		PRID   string         `json:"pr_id"`
		Events []ledger.Event `json:"events"`
	}
	f.getJSON(sagaPath(merged)+"/events", http.StatusOK, &evs)
	if evs.PRID != merged || len(evs.Events) != 5 || evs.Events[0].Type != contracts.TypeMergeRequested || evs.Events[0].Status != ledger.StatusApplied {
		t.Fatalf("events = %+v, want 5 applied, requested first", evs)
	}
	var ce event.Event
	if err := json.Unmarshal(evs.Events[0].Event, &ce); err != nil || ce.Subject() != merged {
		t.Fatalf("stored CloudEvent %s: %v", evs.Events[0].Event, err)
	}

	var fs ledger.Saga
	f.getJSON(sagaPath(failed), http.StatusOK, &fs)
	if fs.State != contracts.StateMergeFailed || fs.FailedStep != contracts.StateValidating || fs.LastError != "checks_failed: ci is red" || fs.Merged {
		t.Fatalf("failed saga = %+v", fs)
	}
}

func TestErrorsSayWhat(t *testing.T) {
	f := newFixture(t, nil)
	for _, c := range []struct {
		path   string
		status int
		msg    string
	}{
		{sagaPath("acme/widgets#99"), 404, "no saga for acme/widgets#99"},
		{sagaPath("acme/widgets#99") + "/events", 404, "no saga for acme/widgets#99"},
		{sagaPath("nope"), 400, "is not <owner>/<name>#<number>"},
		{sagaPath("../../etc/passwd#1"), 400, "pr_id"},
		{sagaPath("acme/widgets#0"), 400, "number must be a positive integer"},
		{"/api/v1/sagas/acme/widgets%2342", 400, "escape the PR id as one path segment"},
		{"/api/v1/sagas?state=DONE", 400, `state "DONE" is not one of`},
		{"/api/v1/sagas?repo=acme/..x", 400, "repo"},
		{"/api/v1/sagas?limit=-3", 400, "limit must be a positive integer"},
		{"/api/v1/sagas?limit=ten&state=NOPE", 400, "; "}, // both problems, one line
		{"/api/v1/sagas?cursor=bogus", 400, "cursor is not one this API handed out"},
	} {
		var body map[string]any
		f.getJSON(c.path, c.status, &body)
		msg, _ := body["error"].(string)
		if !strings.Contains(msg, c.msg) {
			t.Errorf("GET %s: error %q, want it to contain %q", c.path, msg, c.msg)
		}
	}
}

func TestListSagas(t *testing.T) {
	f := newFixture(t, nil)
	var page ledger.Page
	f.getJSON("/api/v1/sagas", http.StatusOK, &page)
	// Most recently updated first: the in-flight one was seeded last.
	if len(page.Sagas) != 3 || page.Sagas[0].PRID != inflight || page.NextCursor != "" || page.Sagas[0].Transitions != nil {
		t.Fatalf("list = %+v, want 3 sagas, %s first, no cursor, no transitions", page, inflight)
	}
	f.getJSON("/api/v1/sagas?state=MERGED", http.StatusOK, &page)
	if len(page.Sagas) != 1 || page.Sagas[0].PRID != merged {
		t.Fatalf("state=MERGED: %+v", page.Sagas)
	}
	f.getJSON("/api/v1/sagas?repo=acme/widgets", http.StatusOK, &page)
	if len(page.Sagas) != 2 {
		t.Fatalf("repo=acme/widgets: %+v", page.Sagas)
	}
	var seen []string
	path := "/api/v1/sagas?limit=1"
	for range 5 {
		f.getJSON(path, http.StatusOK, &page)
		for _, s := range page.Sagas {
			seen = append(seen, s.PRID)
		}
		if page.NextCursor == "" {
			break
		}
		path = "/api/v1/sagas?limit=1&cursor=" + url.QueryEscape(page.NextCursor)
	}
	if got, want := strings.Join(seen, " "), inflight+" "+failed+" "+merged; got != want {
		t.Fatalf("paged: %s, want %s", got, want)
	}
	var raw map[string]any
	f.getJSON("/api/v1/sagas?limit=100000", http.StatusOK, &raw)
	if _, ok := raw["next_cursor"]; !ok {
		t.Fatalf("list JSON lacks next_cursor: %v", raw)
	}
}

func TestStats(t *testing.T) {
	f := newFixture(t, nil)
	var st ledger.Stats
	f.getJSON("/api/v1/stats", http.StatusOK, &st)
	if st.Total != 3 || st.States[contracts.StateMerged] != 1 || st.States[contracts.StateMergeFailed] != 1 ||
		st.States[contracts.StateValidating] != 1 || len(st.States) != len(contracts.States) {
		t.Fatalf("stats = %+v", st)
	}
	// Step durations say which part of the history they cover: the last
	// day, at most the last 10,000 transitions; here all eight of them
	// (five of the merged saga, two of the failed one, one in flight).
	w := st.Window
	if !w.Since.Equal(now.Add(-ledger.StepWindowAge)) || w.Limit != ledger.StepWindowTransitions || w.Transitions != 8 || w.Oldest.IsZero() {
		t.Errorf("steps_window = %+v, want since %v, limit %d, 8 transitions", w, now.Add(-ledger.StepWindowAge), ledger.StepWindowTransitions)
	}
	if got := st.Steps[contracts.StateValidating].Count; got != 2 {
		t.Errorf("VALIDATING visits = %d, want 2 (the merged and the failed saga's)", got)
	}
	var raw struct {
		Window map[string]any `json:"steps_window"`
	}
	f.getJSON("/api/v1/stats", http.StatusOK, &raw)
	for _, k := range []string{"since", "max_transitions", "transitions", "oldest"} {
		if _, ok := raw.Window[k]; !ok {
			t.Errorf("steps_window lacks %q: %v", k, raw.Window)
		}
	}
}

// outbox returns the requested events the API committed.
func (f *fixture) outbox() []contracts.Envelope {
	f.t.Helper()
	var out []contracts.Envelope
	for _, ev := range emitted.Read(f.t, f.db) {
		r := ev.Row
		if msgID := bus.RowMsg(r).Header.Get(bus.HeaderMsgID); r.Subject != contracts.SubjectMergeRequested || msgID != r.ID {
			f.t.Fatalf("outbox row %s on %s with Nats-Msg-Id %q", r.ID, r.Subject, msgID)
		}
		if err := ev.Env.ValidatePayload(); err != nil {
			f.t.Fatalf("outbox event payload: %v", err)
		}
		out = append(out, ev.Env)
	}
	return out
}

func jsonBody(v any) io.Reader {
	b, _ := json.Marshal(v)
	return bytes.NewReader(b)
}

type acceptedBody struct {
	EventID       string `json:"event_id"`
	CorrelationID string `json:"correlation_id"`
	PRID          string `json:"pr_id"`
}

func TestPostMergeRequestLandsInOutbox(t *testing.T) {
	f := newFixture(t, nil)
	r := request("acme/widgets#100")
	r.RequestedBy = "bob"
	body := map[string]any{"client_ref": "forge-77", "unknown_field": true}
	b, _ := json.Marshal(r)
	_ = json.Unmarshal(b, &body)
	resp, out := f.do("POST", "/api/v1/merge-requests", jsonBody(body), "Content-Type", "application/json")
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST: %d %s", resp.StatusCode, out)
	}
	var acc acceptedBody
	if err := json.Unmarshal(out, &acc); err != nil {
		t.Fatal(err)
	}
	if acc.EventID == "" || acc.CorrelationID != acc.EventID || acc.PRID != r.PRID {
		t.Fatalf("answer %+v: want an event id equal to the correlation id, and the pr id", acc)
	}
	evs := f.outbox()
	if len(evs) != 1 {
		t.Fatalf("%d events in the outbox, want 1", len(evs))
	}
	e := evs[0]
	if e.Event.ID() != acc.EventID || e.Event.Source() != contracts.SourceLedger || e.Event.Type() != contracts.TypeMergeRequested ||
		e.Meta.CorrelationID != acc.EventID || e.Meta.ClientRef != "forge-77" || e.Meta.Attempt != 1 || !e.Event.Time().Equal(now) {
		t.Fatalf("outbox event %s / meta %+v", e.Event, e.Meta)
	}
	if got := *e.Payload.(*contracts.Request); got != r {
		t.Fatalf("payload %+v, want %+v", got, r)
	}
}

func TestPostMergeRequestValidates(t *testing.T) {
	f := newFixture(t, nil)
	bad := request("acme/widgets#100")
	bad.HeadSHA, bad.Strategy, bad.TargetBranch = "abc", "rebase", "feature"
	cases := []struct {
		name   string
		body   any
		ct     string
		status int
		fields []string
	}{
		{"bad fields", bad, "application/json", 400, []string{"source_branch", "head_sha", "strategy"}},
		{"bad identity", map[string]any{"pr_id": "acme/widgets#5", "repo": "evil/repo", "pr_number": 5}, "application/json", 400, []string{"repo"}},
		{"no pr", map[string]any{"title": "x"}, "", 400, []string{"pr_id", "repo", "pr_number"}},
		{"long client_ref", map[string]any{"pr_id": "a/b#1", "repo": "a/b", "pr_number": 1, "source_branch": "x", "target_branch": "main",
			"head_sha": headSHA, "strategy": "merge", "requested_by": "me", "client_ref": strings.Repeat("r", 300)}, "", 400, []string{"client_ref"}},
		{"not JSON", "{", "application/json", 400, nil},
		{"wrong type", "x", "text/plain", 415, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var body io.Reader = jsonBody(c.body)
			if s, ok := c.body.(string); ok {
				body = strings.NewReader(s)
			}
			resp, out := f.do("POST", "/api/v1/merge-requests", body, "Content-Type", c.ct)
			if resp.StatusCode != c.status {
				t.Fatalf("%d %s, want %d", resp.StatusCode, out, c.status)
			}
			var e struct {
				Error  string `json:"error"`
				Fields []struct{ Field, Problem string }
			}
			if err := json.Unmarshal(out, &e); err != nil || e.Error == "" {
				t.Fatalf("error body %s: %v", out, err)
			}
			for _, want := range c.fields {
				found := false
				for _, fp := range e.Fields {
					found = found || fp.Field == want
				}
				if !found || !strings.Contains(e.Error, want) {
					t.Errorf("error %s does not name field %q", out, want)
				}
			}
		})
	}
	if n := len(f.outbox()); n != 0 {
		t.Fatalf("%d events published for invalid requests", n)
	}
}

func TestPostMergeRequestNeedsToken(t *testing.T) {
	f := newFixture(t, httpx.Tokens{"s3cret"})
	r := request("acme/widgets#100")
	for _, auth := range []string{"", "Bearer wrong", "s3cret"} {
		resp, out := f.do("POST", "/api/v1/merge-requests", jsonBody(r), "Authorization", auth)
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(out), "bearer token") {
			t.Errorf("Authorization %q: %d %s, want 401", auth, resp.StatusCode, out)
		}
	}
	if resp, out := f.do("POST", "/api/v1/merge-requests", jsonBody(r), "Authorization", "Bearer s3cret"); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("with the token: %d %s", resp.StatusCode, out)
	}
	// Reads need the token too.
	if resp, _ := f.do("GET", sagaPath(merged), nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("GET without a token while one is configured: %d, want 401", resp.StatusCode)
	}
	if resp, _ := f.do("GET", sagaPath(merged), nil, "Authorization", "Bearer s3cret"); resp.StatusCode != 200 {
		t.Fatalf("GET with the token: %d", resp.StatusCode)
	}
}

func TestPostMergeRequestAsCloudEvent(t *testing.T) {
	f := newFixture(t, nil)
	r := request("acme/widgets#100")
	r.RequestedBy = "carol"
	structured, err := contracts.NewRequested("client-evt-1", "https://forge.test/hooks", now, r, "abc")
	if err != nil {
		t.Fatal(err)
	}
	sb, _ := json.Marshal(structured)
	resp, out := f.do("POST", "/api/v1/merge-requests", bytes.NewReader(sb), "Content-Type", "application/cloudevents+json")
	if resp.StatusCode != http.StatusAccepted || !strings.Contains(string(out), `"event_id": "client-evt-1"`) {
		t.Fatalf("structured: %d %s", resp.StatusCode, out)
	}

	binary, err := contracts.NewRequested("client-evt-2", "https://forge.test/hooks", now, request("acme/widgets#101"), "")
	if err != nil {
		t.Fatal(err)
	}
	req, err := cehttp.NewHTTPRequestFromEvent(context.Background(), f.srv.URL+"/api/v1/merge-requests", *binary)
	if err != nil {
		t.Fatal(err)
	}
	if req.Header.Get("Ce-Id") != "client-evt-2" {
		t.Fatalf("the SDK did not write binary mode: %v", req.Header)
	}
	if resp, out := f.send(req); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("binary: %d %s", resp.StatusCode, out)
	}
	evs := f.outbox()
	if len(evs) != 2 || evs[0].Event.ID() != "client-evt-1" || evs[1].Event.ID() != "client-evt-2" ||
		evs[0].Event.Source() != "https://forge.test/hooks" || evs[0].Meta.ClientRef != "abc" {
		t.Fatalf("outbox = %v", evs)
	}

	// The same event again is the same request: one outbox row.
	if resp, _ := f.do("POST", "/api/v1/merge-requests", bytes.NewReader(sb), "Content-Type", "application/cloudevents+json"); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("repeat: %d", resp.StatusCode)
	}
	if n := len(f.outbox()); n != 2 {
		t.Fatalf("%d outbox rows after a repeat, want 2", n)
	}

	for name, mk := range map[string]func() (*event.Event, error){
		"step event": func() (*event.Event, error) {
			return contracts.Follow(structured, "x-1", contracts.TypeMergeValidated, contracts.ServiceValidator, now, contracts.Validated{Request: r})
		},
		"service source": func() (*event.Event, error) {
			e := structured.Clone()
			e.SetSource("/prsaga/merger")
			return &e, nil
		},
		"bad field": func() (*event.Event, error) {
			bad := r
			bad.Strategy = "octopus"
			return contracts.NewRequested("client-evt-3", "https://forge.test", now, bad, "")
		},
		"subject mismatch": func() (*event.Event, error) {
			e := structured.Clone()
			e.SetSubject("acme/widgets#1")
			return &e, nil
		},
	} {
		e, err := mk()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(e)
		resp, out := f.do("POST", "/api/v1/merge-requests", bytes.NewReader(b), "Content-Type", "application/cloudevents+json")
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(out), `"error"`) {
			t.Errorf("%s: %d %s, want 400", name, resp.StatusCode, out)
		}
	}
	if resp, out := f.do("POST", "/api/v1/merge-requests", strings.NewReader("{not json"), "Content-Type", "application/cloudevents+json"); resp.StatusCode != 400 {
		t.Errorf("garbage CloudEvent: %d %s", resp.StatusCode, out)
	}
}

func TestDashboard(t *testing.T) {
	f := newFixture(t, nil)
	resp, b := f.do("GET", "/", nil)
	page := string(b)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	for _, want := range []string{
		`<meta http-equiv="refresh" content="5">`,
		`href="/sagas/acme%2Fwidgets%2342"`,
		`href="/?state=MERGE_FAILED"`,
		`MERGED (1)`,
		`checks_failed: ci is red`,
		`within the most recent 8 transitions`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("dashboard lacks %s", want)
		}
	}
	if resp.Header.Get("Content-Security-Policy") == "" {
		t.Error("dashboard has no Content-Security-Policy")
	}

	_, b = f.do("GET", "/?state=MERGE_FAILED", nil)
	if !strings.Contains(string(b), failed) || strings.Contains(string(b), ">"+merged+"<") {
		t.Errorf("state filter: the page should list %s only", failed)
	}
	if resp, b := f.do("GET", "/?state=%3Cscript%3E", nil); resp.StatusCode != 400 || strings.Contains(string(b), "<script>") {
		t.Errorf("bad state: %d, and the input must come back escaped: %s", resp.StatusCode, b)
	}

	// Follow the dashboard's own link to the timeline.
	link := regexp.MustCompile(`href="(/sagas/[^"]+)"`).FindStringSubmatch(page)
	if link == nil {
		t.Fatal("no timeline link")
	}
	resp, b = f.do("GET", link[1], nil)
	page = string(b)
	if resp.StatusCode != 200 || !strings.Contains(page, "<h1>"+inflight+"</h1>") {
		t.Fatalf("timeline %s: %d", link[1], resp.StatusCode)
	}
	resp, b = f.do("GET", "/sagas/"+url.PathEscape(merged), nil)
	page = string(b)
	if resp.StatusCode != 200 {
		t.Fatalf("timeline: %d", resp.StatusCode)
	}
	for _, want := range []string{"INDEXING", "MERGED", mergeSHA, "prsaga.merge.indexed.v1", "/prsaga/indexer", "&lt;script&gt;alert(1)&lt;/script&gt;"} {
		if !strings.Contains(page, want) {
			t.Errorf("timeline lacks %q", want)
		}
	}
	if strings.Contains(page, hostile) {
		t.Error("timeline shows the requester's name unescaped")
	}
	if resp, _ := f.do("GET", "/sagas/"+url.PathEscape("acme/widgets#404"), nil); resp.StatusCode != 404 {
		t.Errorf("unknown timeline: %d, want 404", resp.StatusCode)
	}
	if resp, _ := f.do("GET", "/sagas/bogus", nil); resp.StatusCode != 400 {
		t.Errorf("bad id timeline: %d, want 400", resp.StatusCode)
	}
}
