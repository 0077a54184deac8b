package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/store/emitted"
	"github.com/prsaga/prsaga/services/ledger"
	ledgersqlite "github.com/prsaga/prsaga/services/ledger/sqlite"
)

var (
	fingerprintField = regexp.MustCompile(`name="fingerprint" value="([0-9a-f]+)"`)
	jobPath          = regexp.MustCompile(`^/retries/[^/]+$`)
)

// failNotifying projects, for each PR, a saga that merged and then failed
// at NOTIFYING (a webhook receiver down: retryable), stamped from at on.
func (f *fixture) failNotifying(at time.Time, prs ...string) {
	f.t.Helper()
	store := ledgersqlite.NewStore(f.db)
	proj := &ledger.Projector{Now: func() time.Time { at = at.Add(time.Second); return at }}
	for _, pr := range prs {
		r := request(pr)
		req := requested(f.t, r)
		project(f.t, store, proj, req)
		project(f.t, store, proj, follow(f.t, req, contracts.TypeMergeValidated, contracts.ServiceValidator, contracts.Validated{Request: r}))
		project(f.t, store, proj, follow(f.t, req, contracts.TypeMerged, contracts.ServiceMerger, contracts.Merged{Request: r, MergeSHA: mergeSHA}))
		project(f.t, store, proj, follow(f.t, req, contracts.TypeStepFailed, contracts.ServiceNotifier,
			contracts.StepFailed{Request: r, Step: contracts.StateNotifying, Code: contracts.CodeWebhookFailed, Reason: "receiver down", Retryable: true}))
	}
}

// bulkForm reads the confirmation form of a dry-run page.
func (f *fixture) bulkForm(page string, fm form) (form, url.Values) {
	f.t.Helper()
	m := fingerprintField.FindStringSubmatch(page)
	if m == nil || fm.csrf == "" || fm.key == "" {
		f.t.Fatalf("no confirmation form on the dry-run page:\n%s", page)
	}
	v := url.Values{"fingerprint": {m[1]}}
	for _, name := range []string{"step", "repo", "since", "reason", "limit", "force", "count"} {
		if m := regexp.MustCompile(`name="` + name + `" value="([^"]*)"`).FindStringSubmatch(page); m != nil {
			v.Set(name, m[1])
		}
	}
	return fm, v
}

// notifyReplays lists the PRs whose NOTIFYING trigger was replayed.
func (f *fixture) notifyReplays() []string {
	f.t.Helper()
	var out []string
	for _, env := range emitted.On(f.t, f.db, contracts.ReplaySubject(contracts.TypeMerged)) {
		if env.Meta.ReplayOf == "" {
			f.t.Fatalf("a merged event in the outbox that is not a replay: %+v", env)
		}
		out = append(out, env.Event.Subject())
	}
	slices.Sort(out)
	return out
}

func (f *fixture) saga(pr string) ledger.Saga {
	f.t.Helper()
	var s ledger.Saga
	f.getJSON(sagaPath(pr), http.StatusOK, &s)
	return s
}

// waitJob polls a bulk retry job until cond holds, for at most 10 s.
func (f *fixture) waitJob(id, what string, cond func(ledger.BulkReport) bool) ledger.BulkReport {
	f.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var rep ledger.BulkReport
		// The read token of readFixture; unguarded fixtures ignore it.
		resp, b := f.do("GET", "/api/v1/retries/"+url.PathEscape(id), nil, "Authorization", "Bearer ro-s3cret")
		if err := json.Unmarshal(b, &rep); err != nil || resp.StatusCode != http.StatusOK {
			f.t.Fatalf("GET job %s: %d %s", id, resp.StatusCode, b)
		}
		if cond(rep) {
			return rep
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("job %s: not %s within 10s: %+v", id, what, rep)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func jobID(t *testing.T, resp *http.Response) string {
	t.Helper()
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || !jobPath.MatchString(loc) {
		t.Fatalf("confirmation: %d to %q, want 303 to the job's page", resp.StatusCode, loc)
	}
	id, _ := url.PathUnescape(strings.TrimPrefix(loc, "/retries/"))
	return id
}

// The operator's path: the failed list filtered by step, "Retry these…",
// a dry run that lists them and changes nothing, the confirmation, the
// job's page until it finished; each saga replayed once, by its actor.
func TestDashboardBulkRetry(t *testing.T) {
	f := newFixture(t, nil)
	prs := []string{"acme/widgets#101", "acme/widgets#102", "acme/widgets#103"}
	f.failNotifying(now.Add(time.Minute), prs...)

	_, page, _ := f.load("/?state=MERGE_FAILED")
	if !strings.Contains(page, `id="failed-link"`) {
		t.Fatalf("the dashboard's failed list has no link to the bulk retry:\n%s", page)
	}
	code, page, fm := f.load("/failed?step=NOTIFYING")
	if code != http.StatusOK || !strings.Contains(page, `id="retry-these" href="/failed/retry?step=NOTIFYING"`) || strings.Contains(page, ">"+failed+"<") {
		t.Fatalf("failed list by step: %d\n%s", code, page)
	}
	for _, pr := range prs {
		if !strings.Contains(page, ">"+pr+"<") {
			t.Fatalf("failed list lacks %s:\n%s", pr, page)
		}
	}

	code, page, fm = f.load("/failed/retry?step=NOTIFYING", fm.cookies...)
	if code != http.StatusOK || strings.Count(page, `class="outcome-would_replay"`) != len(prs) || strings.Contains(page, ">"+failed+"<") ||
		!strings.Contains(page, `<strong id="would">3</strong> would be replayed`) || strings.Contains(page, `http-equiv="refresh"`) {
		t.Fatalf("dry run: %d\n%s", code, page)
	}
	for _, pr := range prs {
		if !strings.Contains(page, ">"+pr+"<") || !strings.Contains(page, "replays "+contracts.TypeMerged+" as attempt 2") {
			t.Fatalf("dry run lacks %s replayed as attempt 2:\n%s", pr, page)
		}
	}
	if got := f.notifyReplays(); len(got) != 0 {
		t.Fatalf("the dry run replayed %v", got)
	}
	if s := f.saga(prs[0]); s.State != contracts.StateMergeFailed || s.Attempts != 1 {
		t.Fatalf("after the dry run: %+v, want still MERGE_FAILED", s)
	}

	fm, v := f.bulkForm(page, fm)
	resp := f.post("/failed/retry", fm, v)
	id := jobID(t, resp)
	rep := f.waitJob(id, "finished", func(r ledger.BulkReport) bool { return r.Finished })
	if rep.Matched != len(prs) || rep.Replayed != len(prs) || rep.DryRun || rep.Cancelled {
		t.Fatalf("job: %+v, want the 3 replayed", rep)
	}
	if got := f.notifyReplays(); !slices.Equal(got, prs) {
		t.Fatalf("replayed %v, want each of %v once", got, prs)
	}
	for _, pr := range prs {
		s := f.saga(pr)
		last := s.Transitions[len(s.Transitions)-1]
		if s.State != contracts.StateNotifying || s.Attempts != 2 || last.Actor != "local" {
			t.Fatalf("%s after the bulk retry: %+v (last transition %+v), want NOTIFYING attempt 2 by local", pr, s, last)
		}
	}
	_, page, _ = f.load(resp.Header.Get("Location"))
	if !strings.Contains(page, `id="job-state">finished`) || strings.Count(page, `class="outcome-replayed"`) != len(prs) || strings.Contains(page, `http-equiv="refresh"`) || strings.Contains(page, `id="cancel"`) {
		t.Fatalf("finished job's page:\n%s", page)
	}
	// The same form again (a double submit) goes to the same job.
	if again := f.post("/failed/retry", fm, v); again.Header.Get("Location") != resp.Header.Get("Location") {
		t.Fatalf("double submit: %d to %q, want the first job %q", again.StatusCode, again.Header.Get("Location"), resp.Header.Get("Location"))
	}
	if got := f.notifyReplays(); len(got) != len(prs) {
		t.Fatalf("after a double submit %d replays, want %d", len(got), len(prs))
	}
}

// Between the dry run and the confirmation the selection changed: one saga
// shown was retried by someone else and another failed, so the count is the
// same. Nothing is replayed; the new dry run is shown, and confirming that
// one replays what it shows.
func TestDashboardBulkRetryRefusesAChangedSet(t *testing.T) {
	f := newFixture(t, nil)
	f.failNotifying(now.Add(time.Minute), "acme/widgets#101", "acme/widgets#102")
	_, page, fm := f.load("/failed/retry?step=NOTIFYING")
	fm, v := f.bulkForm(page, fm)

	if code, out, _ := f.retry("acme/widgets#101", ""); code != http.StatusAccepted {
		t.Fatalf("single retry: %d %+v", code, out)
	}
	f.failNotifying(now.Add(2*time.Minute), "acme/widgets#103")
	before := len(f.notifyReplays())

	req, _ := http.NewRequest("POST", f.srv.URL+"/failed/retry", strings.NewReader(withForm(v, fm).Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", f.srv.URL)
	for _, c := range fm.cookies {
		req.AddCookie(c)
	}
	resp, b := f.send(req)
	page = string(b)
	if resp.StatusCode != http.StatusConflict || !strings.Contains(page, `id="changed"`) || !strings.Contains(page, "(2 then, 2 now): nothing was replayed") {
		t.Fatalf("confirming a changed selection: %d, want 409 saying it changed\n%s", resp.StatusCode, page)
	}
	if !strings.Contains(page, ">acme/widgets#103<") || strings.Contains(page, ">acme/widgets#101<") {
		t.Fatalf("the new dry run does not list the new selection:\n%s", page)
	}
	if n := len(f.notifyReplays()); n != before {
		t.Fatalf("a refused confirmation replayed %d sagas", n-before)
	}
	fm2 := form{cookies: fm.cookies}
	if m := csrfField.FindStringSubmatch(page); m != nil {
		fm2.csrf = m[1]
	}
	if m := keyField.FindStringSubmatch(page); m != nil {
		fm2.key = m[1]
	}
	fm2, v2 := f.bulkForm(page, fm2)
	if fm2.key == fm.key || v2.Get("fingerprint") == v.Get("fingerprint") {
		t.Fatalf("the new dry run carries the old form (key %q, fingerprint %q)", fm2.key, v2.Get("fingerprint"))
	}
	id := jobID(t, f.post("/failed/retry", fm2, v2))
	rep := f.waitJob(id, "finished", func(r ledger.BulkReport) bool { return r.Finished })
	if rep.Replayed != 2 || rep.Items[0].PRID != "acme/widgets#103" {
		t.Fatalf("job of the new dry run: %+v, want #103 and #102 replayed", rep)
	}
	if got := f.notifyReplays(); !slices.Equal(got, []string{"acme/widgets#101", "acme/widgets#102", "acme/widgets#103"}) {
		t.Fatalf("replays %v, want each saga once", got)
	}
}

func withForm(v url.Values, fm form) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = vs
	}
	out.Set("csrf", fm.csrf)
	out.Set("key", fm.key)
	return out
}

// With tokens, only an operator's session sees "Retry these…", the dry run
// and the confirmation; a read session and a browser without a session are
// refused, and so are forms without the CSRF token or from another origin.
func TestDashboardBulkRetryNeedsAnOperator(t *testing.T) {
	f := readFixture(t)
	login := func(tok string) []*http.Cookie {
		t.Helper()
		_, _, lf := f.load("/login")
		resp := f.post("/login", lf, url.Values{"token": {tok}, "next": {"/failed"}})
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("login with %s: %d", tok, resp.StatusCode)
		}
		return append(lf.cookies, resp.Cookies()...)
	}
	const list, dry = "/failed?step=VALIDATING&force=true", "/failed/retry?step=VALIDATING&force=true"
	if code, page, _ := f.load(list); code != http.StatusOK || !strings.Contains(page, "Log in") {
		t.Fatalf("failed list without a session: %d, want the login page", code)
	}

	reader := login("ro-s3cret")
	code, page, rfm := f.load(list, reader...)
	if code != http.StatusOK || !strings.Contains(page, ">"+failed+"<") || strings.Contains(page, `id="retry-these"`) {
		t.Fatalf("failed list with a read session: %d, want the list without the button\n%s", code, page)
	}
	if code, page, _ := f.load(dry, reader...); code != http.StatusForbidden || !strings.Contains(page, "PRSAGA_API_TOKEN") {
		t.Fatalf("dry run with a read session: %d, want 403 naming PRSAGA_API_TOKEN", code)
	}

	operator := login("op-s3cret")
	code, page, ofm := f.load(dry, operator...)
	if code != http.StatusOK || !strings.Contains(page, `class="outcome-would_replay"`) || !strings.Contains(page, "signed in as alice") {
		t.Fatalf("dry run with an operator session: %d\n%s", code, page)
	}
	ofm, v := f.bulkForm(page, ofm)

	rfm.key = ofm.key
	if resp := f.post("/failed/retry", rfm, v); resp.StatusCode != http.StatusForbidden {
		t.Errorf("confirmation posted with a read session: %d, want 403", resp.StatusCode)
	}
	anon := form{csrf: ofm.csrf, key: ofm.key} // the CSRF cookie, no session
	for _, c := range ofm.cookies {
		if c.Name != "prsaga_session" {
			anon.cookies = append(anon.cookies, c)
		}
	}
	if resp := f.post("/failed/retry", anon, v); resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/login?next=") {
		t.Errorf("confirmation without a session: %d to %q, want 303 to log in", resp.StatusCode, resp.Header.Get("Location"))
	}
	bad := ofm
	bad.csrf = strings.Repeat("0", 64)
	if resp := f.post("/failed/retry", bad, v); resp.StatusCode != http.StatusForbidden {
		t.Errorf("confirmation with a wrong CSRF token: %d, want 403", resp.StatusCode)
	}
	if resp := f.post("/failed/retry", ofm, v, "Origin", "https://evil.example"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("confirmation from another origin: %d, want 403", resp.StatusCode)
	}
	if n := len(f.replays()); n != 0 {
		t.Fatalf("refused confirmations replayed %d sagas", n)
	}

	id := jobID(t, f.post("/failed/retry", ofm, v))
	rep := f.waitJob(id, "finished", func(r ledger.BulkReport) bool { return r.Finished })
	if rep.Replayed != 1 || len(f.replays()) != 1 {
		t.Fatalf("operator's bulk retry: %+v, want %s replayed (forced)", rep, failed)
	}
	var s ledger.Saga
	resp, b := f.do("GET", sagaPath(failed), nil, "Authorization", "Bearer ro-s3cret")
	if err := json.Unmarshal(b, &s); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", sagaPath(failed), resp.StatusCode, b)
	}
	if last := s.Transitions[len(s.Transitions)-1]; last.Actor != "alice" {
		t.Fatalf("the bulk retry is recorded by %q, want alice", last.Actor)
	}
	if resp := f.post("/retries/"+url.PathEscape(id)+"/cancel", rfm, nil); resp.StatusCode != http.StatusForbidden {
		t.Errorf("cancel with a read session: %d, want 403", resp.StatusCode)
	}
	if code, _, _ := f.load("/retries/no-such-job", operator...); code != http.StatusNotFound {
		t.Errorf("unknown job's page: %d, want 404", code)
	}
}

// A slow bulk retry cancelled from its page replays no further saga.
func TestDashboardBulkRetryCancel(t *testing.T) {
	f := newFixture(t, nil)
	prs := []string{"acme/widgets#101", "acme/widgets#102", "acme/widgets#103"}
	f.failNotifying(now.Add(time.Minute), prs...)
	_, page, fm := f.load("/failed/retry?step=NOTIFYING")
	fm, v := f.bulkForm(page, fm)
	v.Set("rate", "0.2") // one replay, then 5 s before the next
	resp := f.post("/failed/retry", fm, v)
	id := jobID(t, resp)
	f.waitJob(id, "one saga replayed", func(r ledger.BulkReport) bool { return r.Done >= 1 })
	_, page, jfm := f.load(resp.Header.Get("Location"), fm.cookies...)
	if !strings.Contains(page, `id="job-state">running`) || !strings.Contains(page, `http-equiv="refresh"`) || !strings.Contains(page, `id="cancel"`) {
		t.Fatalf("running job's page: want progress, a refresh and a cancel button\n%s", page)
	}
	jfm.key = ""
	if resp := f.post("/retries/"+url.PathEscape(id)+"/cancel", jfm, nil); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/retries/"+id {
		t.Fatalf("cancel: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	rep := f.waitJob(id, "finished", func(r ledger.BulkReport) bool { return r.Finished })
	if !rep.Cancelled || rep.Replayed != 1 || len(f.notifyReplays()) != 1 {
		t.Fatalf("cancelled job: %+v, %d replays; want cancelled after 1", rep, len(f.notifyReplays()))
	}
	_, page, _ = f.load(resp.Header.Get("Location"))
	if !strings.Contains(page, `id="job-state">cancelled`) {
		t.Fatalf("cancelled job's page:\n%s", page)
	}
}

// A filter the ledger refuses is shown on the list page, not run.
func TestDashboardFailedListFilterErrors(t *testing.T) {
	f := newFixture(t, nil)
	for q, want := range map[string]string{
		"step=MERGED":      "is not a step",
		"reason=%28":       "is not a regular expression",
		"since=yesterday":  "duration back from now",
		"limit=-1":         "must be between",
		"repo=..%2Fescape": "repo",
	} {
		code, page, _ := f.load("/failed?" + q)
		if code != http.StatusBadRequest || !strings.Contains(page, `id="filter-error"`) || !strings.Contains(page, want) {
			t.Errorf("/failed?%s: %d, want 400 saying %q\n%s", q, code, want, page)
		}
		if code, _, _ := f.load("/failed/retry?" + q); code != http.StatusBadRequest {
			t.Errorf("/failed/retry?%s: %d, want 400", q, code)
		}
	}
	// since as a duration selects by the API's clock.
	f.failNotifying(now.Add(time.Minute), "acme/widgets#101")
	f.clock.Add(time.Hour)
	_, page, _ := f.load("/failed?since=30m")
	if !strings.Contains(page, "No failed saga matches") {
		t.Fatalf("since=30m an hour after the failure lists:\n%s", page)
	}
	_, page, _ = f.load("/failed?since=" + fmt.Sprint(2*time.Hour))
	if !strings.Contains(page, ">acme/widgets#101<") {
		t.Fatalf("since=2h lacks the failure:\n%s", page)
	}
}
