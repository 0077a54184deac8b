package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/httpx"
	"github.com/prsaga/prsaga/platform/store/emitted"
	"github.com/prsaga/prsaga/services/ledger"
)

type retryJSON struct {
	Error      string `json:"error"`
	NeedsForce bool   `json:"needs_force"`
	EventID    string `json:"event_id"`
	ReplayOf   string `json:"replay_of"`
	Step       string `json:"step"`
	Attempt    int    `json:"attempt"`
	Actor      string `json:"actor"`
	DryRun     bool   `json:"dry_run"`
	Event      json.RawMessage
}

func (f *fixture) retry(pr, query string, header ...string) (int, retryJSON, http.Header) {
	f.t.Helper()
	resp, b := f.do("POST", sagaPath(pr)+"/retry"+query, nil, header...)
	var out retryJSON
	if err := json.Unmarshal(b, &out); err != nil {
		f.t.Fatalf("retry answer %s: %v", b, err)
	}
	return resp.StatusCode, out, resp.Header
}

func TestRetryRoute(t *testing.T) {
	f := newFixture(t, nil)
	code, out, _ := f.retry(failed, "")
	if code != http.StatusConflict || !out.NeedsForce || !strings.Contains(out.Error, "force=true") {
		t.Fatalf("checks_failed without force: %d %+v, want 409 naming force=true", code, out)
	}
	code, out, _ = f.retry(failed, "?force=true&dry_run=true")
	if code != http.StatusOK || !out.DryRun || out.Step != "VALIDATING" || out.Attempt != 2 || len(out.Event) == 0 {
		t.Fatalf("dry run: %d %+v, want 200 with the event", code, out)
	}
	if n := len(f.replays()); n != 0 {
		t.Fatalf("the dry run put %d events into the outbox", n)
	}
	code, first, _ := f.retry(failed, "?force=true", "Idempotency-Key", "key-1")
	if code != http.StatusAccepted || first.EventID == "" || first.Actor != "local" || first.ReplayOf == "" {
		t.Fatalf("forced retry: %d %+v, want 202 with the replay's id, actor local", code, first)
	}
	code, again, h := f.retry(failed, "?force=true", "Idempotency-Key", "key-1")
	if code != http.StatusAccepted || again.EventID != first.EventID || h.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("same key again: %d %+v, want the first answer", code, again)
	}
	code, out, _ = f.retry(failed, "?force=true")
	if code != http.StatusConflict || !strings.Contains(out.Error, "not MERGE_FAILED") {
		t.Fatalf("second retry: %d %+v, want 409", code, out)
	}
	if code, out, _ = f.retry(merged, ""); code != http.StatusConflict {
		t.Fatalf("merged saga: %d %+v, want 409", code, out)
	}
	reqs := f.replays()
	if len(reqs) != 1 || reqs[0].Event.ID() != first.EventID || reqs[0].Meta.ReplayOf != first.ReplayOf || reqs[0].Event.Source() != contracts.SourceLedger {
		t.Fatalf("outbox %+v: want exactly the replay %s", reqs, first.EventID)
	}
	var s ledger.Saga
	f.getJSON(sagaPath(failed), http.StatusOK, &s)
	if last := s.Transitions[len(s.Transitions)-1]; last.Actor != "local" || last.EventID != first.EventID {
		t.Fatalf("history does not say who retried: %+v", last)
	}
	for _, c := range []struct {
		path   string
		header []string
		want   int
	}{
		{sagaPath("acme/widgets#404") + "/retry", nil, http.StatusNotFound},
		{sagaPath(failed) + "/retry?force=maybe", nil, http.StatusBadRequest},
		{sagaPath(failed) + "/retry", []string{"Idempotency-Key", "has space"}, http.StatusBadRequest},
		{sagaPath(merged) + "/retry", []string{"Idempotency-Key", "key-1"}, http.StatusUnprocessableEntity},
	} {
		if resp, b := f.do("POST", c.path, nil, c.header...); resp.StatusCode != c.want || !strings.Contains(string(b), `"error"`) {
			t.Errorf("POST %s %v: %d %s, want %d with a JSON error", c.path, c.header, resp.StatusCode, b, c.want)
		}
	}
	// A JSON body works as well as the query.
	f2 := newFixture(t, nil)
	resp, b := f2.do("POST", sagaPath(failed)+"/retry", strings.NewReader(`{"force": true}`), "Content-Type", "application/json")
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("JSON body: %d %s", resp.StatusCode, b)
	}
}

func TestRetryRouteNeedsTokenAndNamesTheActor(t *testing.T) {
	f := newFixture(t, httpx.Tokens{"s3cret"}, "alice")
	if resp, _ := f.do("POST", sagaPath(failed)+"/retry?force=true", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no token: %d, want 401", resp.StatusCode)
	}
	code, out, _ := f.retry(failed, "?force=true", "Authorization", "Bearer s3cret")
	if code != http.StatusAccepted || out.Actor != "alice" {
		t.Fatalf("with the token: %d %+v, want 202 by alice", code, out)
	}
}

func TestRunRoute(t *testing.T) {
	f := newFixture(t, nil)
	var s ledger.Saga
	f.getJSON(sagaPath(merged), http.StatusOK, &s)
	var run ledger.Run
	f.getJSON("/api/v1/runs/"+s.CorrelationID, http.StatusOK, &run)
	if run.PRID != merged || len(run.Transitions) != 5 || len(run.Events) != 5 {
		t.Fatalf("run: %+v, want 5 transitions and 5 events of %s", run, merged)
	}
	if resp, _ := f.do("GET", "/api/v1/runs/unknown-run", nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown run: %d", resp.StatusCode)
	}
	if resp, _ := f.do("GET", "/api/v1/runs/"+url.PathEscape("bad id!"), nil); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("bad run id: %d", resp.StatusCode)
	}
}

// stuck=true lists exactly the in-flight sagas past their state's timeout.
func TestListStuck(t *testing.T) {
	f := newFixture(t, nil)
	var page ledger.Page
	f.getJSON("/api/v1/sagas?stuck=true", http.StatusOK, &page)
	if len(page.Sagas) != 0 {
		t.Fatalf("stuck right away: %+v", page.Sagas)
	}
	f.clock.Add(time.Hour)
	f.getJSON("/api/v1/sagas?stuck=true", http.StatusOK, &page)
	if len(page.Sagas) != 1 || page.Sagas[0].PRID != inflight || !page.Sagas[0].Stuck {
		t.Fatalf("stuck after an hour: %+v, want only %s, marked stuck", page.Sagas, inflight)
	}
	f.getJSON("/api/v1/sagas?stuck=true&state=MERGING", http.StatusOK, &page)
	if len(page.Sagas) != 0 {
		t.Fatalf("stuck in MERGING: %+v", page.Sagas)
	}
	if resp, _ := f.do("GET", "/api/v1/sagas?stuck=sometimes", nil); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("bad stuck: %d", resp.StatusCode)
	}
	_, b := f.do("GET", "/?stuck=true", nil)
	if !strings.Contains(string(b), `<span class="stuck">stuck</span>`) || strings.Contains(string(b), ">"+merged+"<") {
		t.Fatalf("dashboard stuck filter:\n%s", b)
	}
}

var (
	csrfField = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)
	keyField  = regexp.MustCompile(`name="key" value="([^"]+)"`)
)

// form is what a browser posts from a page it loaded.
type form struct {
	cookies []*http.Cookie
	csrf    string
	key     string
}

func (f *fixture) load(path string, cookies ...*http.Cookie) (int, string, form) {
	f.t.Helper()
	req, _ := http.NewRequest("GET", f.srv.URL+path, nil)
	for _, c := range cookies {
		req.AddCookie(c)
	}
	resp, b := f.send(req)
	fm := form{cookies: append(cookies, resp.Cookies()...)}
	if m := csrfField.FindStringSubmatch(string(b)); m != nil {
		fm.csrf = m[1]
	}
	if m := keyField.FindStringSubmatch(string(b)); m != nil {
		fm.key = m[1]
	}
	return resp.StatusCode, string(b), fm
}

func (f *fixture) post(path string, fm form, values url.Values, header ...string) *http.Response {
	f.t.Helper()
	if values == nil {
		values = url.Values{}
	}
	values.Set("csrf", fm.csrf)
	if fm.key != "" {
		values.Set("key", fm.key)
	}
	req, _ := http.NewRequest("POST", f.srv.URL+path, strings.NewReader(values.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", f.srv.URL)
	for _, c := range fm.cookies {
		req.AddCookie(c)
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	client := *f.srv.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := client.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

func TestDashboardRetryForm(t *testing.T) {
	f := newFixture(t, nil)
	code, page, fm := f.load("/sagas/" + url.PathEscape(failed))
	if code != 200 || !strings.Contains(page, `id="retry"`) || !strings.Contains(page, "Failed at VALIDATING") || !strings.Contains(page, "the code is NOT merged") {
		t.Fatalf("timeline of a failed saga: %d\n%s", code, page)
	}
	code, page, fm = f.load("/sagas/"+url.PathEscape(failed)+"/retry", fm.cookies...)
	if code != 200 || fm.csrf == "" || fm.key == "" || !strings.Contains(page, `id="force"`) || strings.Contains(page, `http-equiv="refresh"`) {
		t.Fatalf("confirmation page: %d, csrf %q, key %q\n%s", code, fm.csrf, fm.key, page)
	}
	path := "/sagas/" + url.PathEscape(failed) + "/retry"
	force := url.Values{"force": {"true"}}
	bad := fm
	bad.csrf = strings.Repeat("0", 64)
	for name, c := range map[string]struct {
		fm     form
		header []string
	}{
		"wrong CSRF token":      {bad, nil},
		"no CSRF cookie":        {form{csrf: fm.csrf, key: fm.key}, nil},
		"cross-site origin":     {fm, []string{"Origin", "https://evil.example"}},
		"no origin, no referer": {fm, []string{"Origin", ""}},
		"sec-fetch-site":        {fm, []string{"Sec-Fetch-Site", "cross-site"}},
		"DNS rebinding Host":    {fm, []string{"Host", "rebind.evil.example", "Origin", "http://rebind.evil.example"}},
	} {
		if resp := f.post(path, c.fm, force, c.header...); resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", name, resp.StatusCode)
		}
	}
	if resp := f.post(path, fm, nil); resp.StatusCode != http.StatusConflict {
		t.Fatalf("without force: %d, want 409 back on the confirmation page", resp.StatusCode)
	}
	_, _, fm = f.load(path, fm.cookies...) // a new form: its key was not used
	resp := f.post(path, fm, force)
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/sagas/"+url.PathEscape(failed)+"?retried=") {
		t.Fatalf("confirmed retry: %d to %q, want 303 to the timeline", resp.StatusCode, loc)
	}
	// A double submit (same form, same key) retries once.
	if resp := f.post(path, fm, force); resp.Header.Get("Location") != loc {
		t.Fatalf("double submit: %d %q, want the same redirect", resp.StatusCode, resp.Header.Get("Location"))
	}
	if n := len(f.replays()); n != 1 {
		t.Fatalf("%d replays, want 1", n)
	}
	_, page, _ = f.load(loc)
	if !strings.Contains(page, `id="retried"`) || !strings.Contains(page, "VALIDATING") {
		t.Fatalf("timeline after the retry:\n%s", page)
	}
}

func TestDashboardLoginWithToken(t *testing.T) {
	f := newFixture(t, httpx.Tokens{"s3cret"}, "alice")
	path := "/sagas/" + url.PathEscape(failed) + "/retry"
	_, page, fm := f.load(path)
	if !strings.Contains(page, `href="/login?next=`) {
		t.Fatalf("no login link on a guarded dashboard:\n%s", page)
	}
	resp := f.post(path, fm, url.Values{"force": {"true"}})
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/login?next=") {
		t.Fatalf("retry without a session: %d %q, want a redirect to /login", resp.StatusCode, resp.Header.Get("Location"))
	}
	_, _, lf := f.load("/login?next="+url.QueryEscape(path), fm.cookies...)
	if resp := f.post("/login", lf, url.Values{"token": {"wrong"}, "next": {path}}); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong token: %d", resp.StatusCode)
	}
	resp = f.post("/login", lf, url.Values{"token": {"s3cret"}, "next": {"//evil.example/"}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Fatalf("login: %d to %q, want 303 to / (an off-site next is dropped)", resp.StatusCode, resp.Header.Get("Location"))
	}
	session := append(lf.cookies, resp.Cookies()...)
	_, page, fm = f.load(path, session...)
	if !strings.Contains(page, "signed in as alice") {
		t.Fatalf("after login:\n%s", page)
	}
	if resp := f.post(path, fm, url.Values{"force": {"true"}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("retry with a session: %d", resp.StatusCode)
	}
	var s ledger.Saga
	resp, b := f.do("GET", sagaPath(failed), nil, "Authorization", "Bearer s3cret")
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &s) != nil {
		t.Fatalf("GET %s: %d %s", sagaPath(failed), resp.StatusCode, b)
	}
	if last := s.Transitions[len(s.Transitions)-1]; last.Actor != "alice" {
		t.Fatalf("actor %q, want alice", last.Actor)
	}
}

func TestTimelineSaysWhereTheCodeIs(t *testing.T) {
	f := newFixture(t, nil)
	_, page, _ := f.load("/sagas/" + url.PathEscape(merged))
	for _, want := range []string{"the code IS merged into main at", mergeSHA, `<td>1s</td>`} {
		if !strings.Contains(page, want) {
			t.Errorf("timeline of a merged saga lacks %q", want)
		}
	}
	if strings.Contains(page, `id="retry"`) {
		t.Error("a merged saga offers a retry")
	}
}

// replays returns the requested events in the outbox (retries of VALIDATING).
func (f *fixture) replays() []contracts.Envelope {
	f.t.Helper()
	return emitted.On(f.t, f.db, contracts.ReplaySubject(contracts.TypeMergeRequested))
}
