package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/binding/format"
	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/prsaga/prsaga/contracts"
	psqlite "github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/platform/sqlite/sqlitetest"
	"github.com/prsaga/prsaga/platform/store/emitted"
	"github.com/prsaga/prsaga/services/ledger"
	ledgersqlite "github.com/prsaga/prsaga/services/ledger/sqlite"
)

// Fuzz targets for the ledger's request decoding: merge requests (JSON,
// structured and binary CloudEvents), the saga list's filters, saga paths
// and retries, each through the real routes over a real SQLite store.
// Seed corpora are in testdata/fuzz/<target>.

type eventT = event.Event

type fuzzLedger struct {
	db  *psqlite.DB
	mux *http.ServeMux
}

// newFuzzLedger serves the API over a store holding one saga failed at
// VALIDATING (failed) and one merged (merged).
func newFuzzLedger(f *testing.F) *fuzzLedger {
	f.Helper()
	db := sqlitetest.Open(f, ledgersqlite.Migrations)
	store := ledgersqlite.NewStore(db)
	clock := func() time.Time { return now }
	mux := http.NewServeMux()
	newAPI(store, clock).Routes(mux)
	proj := &ledger.Projector{Now: clock}
	apply := func(e *eventT) { project(f, store, proj, e) }
	for _, pr := range []string{failed, merged} {
		r := request(pr)
		req := requested(f, r)
		apply(req)
		if pr == failed {
			apply(follow(f, req, contracts.TypeStepFailed, contracts.ServiceValidator,
				contracts.StepFailed{Request: r, Step: contracts.StateValidating, Code: contracts.CodeChecksFailed, Reason: "red", Retryable: true}))
		} else {
			apply(follow(f, req, contracts.TypeIndexed, contracts.ServiceIndexer, contracts.Indexed{Request: r, MergeSHA: mergeSHA}))
		}
	}
	l := &fuzzLedger{db: db, mux: mux}
	l.drainOutbox(f)
	return l
}

// drainOutbox marks every outbox row sent and returns them, opened.
func (l *fuzzLedger) drainOutbox(tb testing.TB) []emitted.Event {
	tb.Helper()
	rows := emitted.Read(tb, l.db)
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.Row.ID
	}
	if err := l.db.MarkSent(context.Background(), ids); err != nil {
		tb.Fatal(err)
	}
	return rows
}

// serve runs one request and checks what every answer must be: no 5xx;
// a 4xx API answer is {"error": "..."} (HTML pages and the mux's own 404
// aside). ok is false when the request could not be built.
func (l *fuzzLedger) serve(t *testing.T, req *http.Request) (*httptest.ResponseRecorder, map[string]any) {
	t.Helper()
	rec := httptest.NewRecorder()
	l.mux.ServeHTTP(rec, req)
	if rec.Code >= 500 {
		t.Fatalf("%s %q: answered %d: %s", req.Method, req.URL, rec.Code, rec.Body.Bytes())
	}
	ct := rec.Header().Get("Content-Type")
	if !strings.HasPrefix(ct, "application/json") {
		return rec, nil
	}
	var out map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil && rec.Code >= 400 {
		t.Fatalf("%s %q: answer %d is not a JSON object: %q", req.Method, req.URL, rec.Code, rec.Body.Bytes())
	}
	if msg, _ := out["error"].(string); rec.Code >= 400 && msg == "" {
		t.Fatalf("%s %q: answer %d without an error: %q", req.Method, req.URL, rec.Code, rec.Body.Bytes())
	}
	return rec, out
}

// parseHeaderLines reads "Name: value" lines.
func parseHeaderLines(s string) http.Header {
	h := http.Header{}
	for _, line := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			h.Add(k, strings.TrimPrefix(v, " "))
		}
	}
	return h
}

// FuzzMergeRequest posts merge requests in every form the route takes. An
// accepted one (202) is in the outbox as exactly one requested event that
// every consumer accepts (Open and ValidatePayload pass), with the id and
// correlation id the answer names — and a client's CloudEvent can never
// speak for prsaga: no /prsaga/ source and no replayof (design §3: those
// are the ledger's, and the validator's per-run lock trusts them). A
// refused one leaves the outbox untouched.
func FuzzMergeRequest(f *testing.F) {
	r := request("acme/widgets#9")
	body, _ := json.Marshal(r)
	f.Add("Content-Type: application/json", body)
	f.Add("", body)
	f.Add("Content-Type: application/json\ntraceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", body)
	f.Add("Content-Type: text/plain", body)
	f.Add("Content-Type: application/json", []byte(`{"pr_id":"acme/widgets#9","repo":"acme/widgets","pr_number":-9}`))
	f.Add("Content-Type: application/json", []byte(`{"pr_id":"../../etc#1","repo":"../../etc","pr_number":1}`))
	f.Add("Content-Type: application/json", bytes.Replace(body, []byte(`"feature"`), []byte(`"a/../b"`), 1))
	f.Add("Content-Type: application/json", append(append([]byte{}, body...), []byte(" {}")...))
	f.Add("Content-Type: application/json", []byte(`{"pr_id":"acme/widgets#9","client_ref":"`+strings.Repeat("r", 300)+`"}`))
	e, err := contracts.NewRequested("client-evt-1", "https://forge.test", now, r, "ref")
	if err != nil {
		f.Fatal(err)
	}
	structured, err := format.JSON.Marshal(e)
	if err != nil {
		f.Fatal(err)
	}
	f.Add("Content-Type: application/cloudevents+json", structured)
	f.Add("Content-Type: application/cloudevents-batch+json", []byte("["+string(structured)+"]"))
	withID := func(b []byte, id string) []byte {
		return bytes.Replace(b, []byte(`"client-evt-1"`), []byte(`"`+id+`"`), 1)
	}
	f.Add("Content-Type: application/cloudevents+json", withID(bytes.Replace(structured, []byte(`"https://forge.test"`), []byte(`"/prsaga/ledger"`), 1), "client-evt-3"))
	f.Add("Content-Type: application/cloudevents+json", withID(bytes.Replace(structured, []byte(`"source":`), []byte(`"replayof":"orig-1","source":`), 1), "client-evt-4"))
	binary := "Content-Type: application/json\nCe-Specversion: 1.0\nCe-Id: client-evt-2\nCe-Source: https://forge.test\nCe-Type: prsaga.merge.requested.v1\nCe-Subject: acme/widgets#9"
	f.Add(binary, body)
	f.Add(binary+"\nCe-Replayof: orig-1", body)
	f.Add(strings.Replace(strings.Replace(binary, "https://forge.test", "/prsaga/ledger", 1), "client-evt-2", "client-evt-5", 1)+"\nCe-Replayof: orig-1\nCe-Correlationid: other-run", body)
	f.Add(strings.Replace(strings.Replace(binary, "https://forge.test", "/prsaga/merger", 1), "client-evt-2", "client-evt-6", 1), body)
	f.Add(strings.Replace(binary, "prsaga.merge.requested.v1", "prsaga.merge.merged.v1", 1), body)
	f.Add(strings.Replace(binary, "Ce-Specversion: 1.0", "Ce-Specversion: 0.3", 1), body)
	l := newFuzzLedger(f)
	accepted := map[any]bool{} // event ids: a CloudEvent posted again is deduplicated
	f.Fuzz(func(t *testing.T, headers string, body []byte) {
		req, err := http.NewRequest(http.MethodPost, "http://ledger.test/api/v1/merge-requests", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for k, vs := range parseHeaderLines(headers) {
			if len(k) > 0 && !strings.ContainsAny(k, " \t\r\n") {
				req.Header[http.CanonicalHeaderKey(k)] = vs // as a server reads them off the wire
			}
		}
		rec, out := l.serve(t, req)
		rows := l.drainOutbox(t)
		if rec.Code != http.StatusAccepted {
			if len(rows) != 0 {
				t.Fatalf("a refused request (%d) left %d outbox rows", rec.Code, len(rows))
			}
			return
		}
		if accepted[out["event_id"]] {
			if len(rows) != 0 {
				t.Fatalf("a repeated event id %v left %d outbox rows: the first post must win", out["event_id"], len(rows))
			}
			return
		}
		accepted[out["event_id"]] = true
		if len(rows) != 1 {
			t.Fatalf("an accepted request left %d outbox rows, want 1", len(rows))
		}
		env, ev := rows[0].Env, rows[0].Env.Event
		if err := env.ValidatePayload(); err != nil {
			t.Fatalf("the accepted request's event is refused by consumers: %v", err)
		}
		if ev.Type() != contracts.TypeMergeRequested || out["event_id"] != ev.ID() || out["correlation_id"] != env.Meta.CorrelationID || out["pr_id"] != ev.Subject() {
			t.Fatalf("answer %v for event %s %s (correlation %s)", out, ev.Type(), ev.ID(), env.Meta.CorrelationID)
		}
		ct := strings.ToLower(req.Header.Get("Content-Type"))
		clientEvent := strings.HasPrefix(ct, "application/cloudevents") || req.Header.Get("Ce-Specversion") != ""
		if env.Meta.ReplayOf != "" || clientEvent == strings.HasPrefix(ev.Source(), "/prsaga/") {
			t.Fatalf("a request posted as %s was accepted with source %q, replayof %q", map[bool]string{true: "a CloudEvent", false: "JSON"}[clientEvent], ev.Source(), env.Meta.ReplayOf)
		}
		if env.Meta.CorrelationID != ev.ID() {
			t.Fatalf("an accepted request carries correlation id %q, not its id %q: a new run must be its own", env.Meta.CorrelationID, ev.ID())
		}
	})
}

// FuzzSagaRoutes fuzzes the read routes' path and query decoding: the
// saga list's filters and cursor, a saga, its events, its timeline page
// and the run route. No 5xx, JSON errors, and a listed page keeps to its
// filters.
func FuzzSagaRoutes(f *testing.F) {
	for _, s := range []string{
		"/api/v1/sagas", "/api/v1/sagas?state=MERGED", "/api/v1/sagas?state=merged", "/api/v1/sagas?repo=acme/widgets&limit=1",
		"/api/v1/sagas?repo=../etc", "/api/v1/sagas?limit=-1", "/api/v1/sagas?limit=99999999999999999999", "/api/v1/sagas?stuck=yes",
		"/api/v1/sagas?cursor=AAAA", "/api/v1/sagas?cursor=%ff", "/api/v1/sagas/" + url.PathEscape(failed), "/api/v1/sagas/acme/widgets%237",
		"/api/v1/sagas/" + url.PathEscape(merged) + "/events", "/api/v1/sagas/..%2F..%2Fetc%231", "/api/v1/runs/x", "/api/v1/runs/a%20b",
		"/sagas/" + url.PathEscape(failed), "/sagas/%3Cscript%3E", "/?state=%3Cscript%3E", "/api/v1/stats",
	} {
		f.Add(s)
	}
	l := newFuzzLedger(f)
	f.Fuzz(func(t *testing.T, target string) {
		req, err := http.NewRequest(http.MethodGet, "http://ledger.test"+target, nil)
		if err != nil || !strings.HasPrefix(target, "/") {
			return
		}
		rec, out := l.serve(t, req)
		if rec.Code != http.StatusOK || req.URL.Path != "/api/v1/sagas" {
			return
		}
		q := req.URL.Query()
		sagas, _ := out["sagas"].([]any)
		for _, s := range sagas {
			m := s.(map[string]any)
			if st := q.Get("state"); st != "" && m["state"] != st {
				t.Fatalf("list %q answered a saga in state %v", target, m["state"])
			}
			if repo := q.Get("repo"); repo != "" && m["repo"] != repo {
				t.Fatalf("list %q answered a saga of repo %v", target, m["repo"])
			}
		}
	})
}

// FuzzRetryRequest fuzzes POST /api/v1/sagas/{pr}/retry: the PR path, the
// query switches, the JSON body and the Idempotency-Key. A 202 is only
// ever answered for the failed saga and puts exactly one replay in the
// outbox, from the ledger, naming the original it replays; a dry run or a
// refusal puts nothing there.
func FuzzRetryRequest(f *testing.F) {
	for _, s := range []struct{ pr, query, key, body string }{
		{url.PathEscape(failed), "", "", ""},
		{url.PathEscape(failed), "dry_run=true", "", ""},
		{url.PathEscape(failed), "", "k-1", `{"force":true}`},
		{url.PathEscape(failed), "", "", `{"force":"yes"}`},
		{url.PathEscape(failed), "", strings.Repeat("k", 200), ""},
		{url.PathEscape(failed), "", "k\x00", ""},
		{url.PathEscape(merged), "", "", ""},
		{url.PathEscape(inflight), "", "", ""},
		{"acme%2F..%2310", "", "", ""},
		{url.PathEscape(failed), "force=maybe", "", ""},
		{url.PathEscape(failed), "", "", `[]`},
	} {
		f.Add(s.pr, s.query, s.key, []byte(s.body))
	}
	l := newFuzzLedger(f)
	f.Fuzz(func(t *testing.T, pr, query, key string, body []byte) {
		target := "/api/v1/sagas/" + pr + "/retry?" + query
		req, err := http.NewRequest(http.MethodPost, "http://ledger.test"+target, bytes.NewReader(body))
		if err != nil {
			return
		}
		if len(body) > 0 {
			req.Header.Set("Content-Type", "application/json")
		}
		if key != "" && !strings.ContainsAny(key, "\r\n") {
			req.Header.Set("Idempotency-Key", key)
		}
		rec, out := l.serve(t, req)
		rows := l.drainOutbox(t)
		if rec.Code != http.StatusAccepted {
			if rec.Code != http.StatusOK && rec.Code != http.StatusConflict && len(rows) != 0 {
				t.Fatalf("retry %q answered %d and left %d outbox rows", target, rec.Code, len(rows))
			}
			return
		}
		if out["pr_id"] != failed {
			t.Fatalf("retry %q of %v accepted; only %s is MERGE_FAILED", target, out["pr_id"], failed)
		}
		var replays int
		for _, row := range rows {
			env, ev := row.Env, row.Env.Event
			if ev.Type() == contracts.TypeMergeRequested {
				replays++
				if ev.Source() != contracts.SourceLedger || env.Meta.ReplayOf == "" {
					t.Fatalf("replay from %q replaying %q", ev.Source(), env.Meta.ReplayOf)
				}
			}
		}
		// A key used before (by an earlier input of this run: the ledger
		// lives across inputs) gets the stored answer and replays nothing.
		want := 1
		if rec.Header().Get("Idempotent-Replayed") == "true" {
			want = 0
		}
		if replays != want && out["dry_run"] == nil {
			t.Fatalf("retry %q accepted with %d replays in the outbox, want %d", target, replays, want)
		}
	})
}

// A client's CloudEvent may not claim prsaga's own source or carry
// replayof: found by FuzzMergeRequest (a binary-mode post with
// ce-source /prsaga/ledger, ce-replayof and another run's correlation id
// was accepted and published).
func TestMergeRequestRefusesClientEventsSpeakingForPrsaga(t *testing.T) {
	f := newFixture(t, nil)
	body, _ := json.Marshal(request("acme/widgets#9"))
	for _, tt := range []struct {
		name, source, extra, field string
	}{
		{"ledger source and replay", "/prsaga/ledger", "orig-1", "source"},
		{"ledger source", "/prsaga/ledger", "", "source"},
		{"step source", "/prsaga/validator", "", "source"},
		{"client replay", "https://forge.test", "orig-1", "replayof"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := []string{"Content-Type", "application/json", "Ce-Specversion", "1.0", "Ce-Id", "evt-" + strings.ReplaceAll(tt.name, " ", "-"),
				"Ce-Source", tt.source, "Ce-Type", contracts.TypeMergeRequested, "Ce-Subject", "acme/widgets#9"}
			if tt.extra != "" {
				h = append(h, "Ce-Replayof", tt.extra, "Ce-Correlationid", "another-run")
			}
			resp, raw := f.do(http.MethodPost, "/api/v1/merge-requests", bytes.NewReader(body), h...)
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(raw), `"field": "`+tt.field+`"`) {
				t.Errorf("got %d %s, want 400 naming %s", resp.StatusCode, raw, tt.field)
			}
			if rows, _ := f.db.Unsent(context.Background(), 10); len(rows) != 0 {
				t.Errorf("refused request left %d outbox rows", len(rows))
			}
		})
	}
}

// FuzzDashboardRetryForm fuzzes the dashboard's retry form (POST
// /sagas/{pr}/retry): host, Origin, cookie and form body. Seeded with a
// real form (its CSRF cookie and token read from the confirmation page), a
// retry may only ever happen for a request that carries that cookie, that
// token, an Origin of the dashboard's own host, and a loopback host: no
// mutation gets a replay into the outbox otherwise (design §11).
func FuzzDashboardRetryForm(f *testing.F) {
	l := newFuzzLedger(f)
	const host = "127.0.0.1:8080"
	req := httptest.NewRequest(http.MethodGet, "http://"+host+"/sagas/"+url.PathEscape(failed)+"/retry", nil)
	rec := httptest.NewRecorder()
	l.mux.ServeHTTP(rec, req)
	var cookie string
	for _, c := range rec.Result().Cookies() {
		if c.Name == "prsaga_csrf" {
			cookie = c.Value
		}
	}
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(rec.Body.String())
	if rec.Code != http.StatusOK || cookie == "" || m == nil {
		f.Fatalf("confirmation page: %d, cookie %q, token %v", rec.Code, cookie, m)
	}
	token := m[1]
	form := url.Values{"csrf": {token}, "key": {"dash-0123456789abcdef"}}.Encode()
	pr := url.PathEscape(failed)
	f.Add(pr, host, "http://"+host, cookie, form)
	f.Add(pr, host, "http://evil.example", cookie, form)
	f.Add(pr, host, "", cookie, form)
	f.Add(pr, host, "http://"+host, "", form)
	f.Add(pr, host, "http://"+host, cookie, "csrf=&key=k")
	f.Add(pr, "evil.example", "http://evil.example", cookie, form)
	f.Add(pr, "0.0.0.0:8080", "http://0.0.0.0:8080", cookie, form)
	f.Add(url.PathEscape(merged), host, "http://"+host, cookie, form+"&force=1")
	f.Fuzz(func(t *testing.T, pr, host, origin, cookieValue, body string) {
		req, err := http.NewRequest(http.MethodPost, "http://ledger.test/sagas/"+pr+"/retry", strings.NewReader(body))
		if err != nil {
			return
		}
		req.Host = host
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if cookieValue != "" {
			req.AddCookie(&http.Cookie{Name: "prsaga_csrf", Value: cookieValue})
		}
		rec := httptest.NewRecorder()
		l.mux.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("retry form: %d %s", rec.Code, rec.Body.Bytes())
		}
		replays := 0
		for _, row := range l.drainOutbox(t) {
			if strings.Contains(row.Row.Subject, "requested") || strings.Contains(row.Row.Subject, "validated") {
				replays++
			}
		}
		if replays == 0 {
			return
		}
		vals, _ := url.ParseQuery(body)
		// What the server saw: the cookie as parsed, the Origin header.
		c, _ := req.Cookie("prsaga_csrf")
		sawCookie := ""
		if c != nil {
			sawCookie = c.Value
		}
		if sawCookie != cookie || vals.Get("csrf") != token || origin != "http://"+host ||
			!(strings.HasPrefix(host, "127.0.0.1:") || strings.HasPrefix(host, "localhost:") || strings.HasPrefix(host, "[::1]:")) {
			t.Fatalf("a retry went through for host %q, Origin %q, cookie %q, form %q", host, origin, cookieValue, body)
		}
	})
}
