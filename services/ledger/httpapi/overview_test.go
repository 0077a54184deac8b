package httpapi_test

import (
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/services/ledger"
	ledgersqlite "github.com/prsaga/prsaga/services/ledger/sqlite"
)

// project applies events to the fixture's ledger as the projector does.
func (f *fixture) project(at time.Time, evs ...*event.Event) {
	f.t.Helper()
	store := ledgersqlite.NewStore(f.db)
	proj := &ledger.Projector{Now: func() time.Time { at = at.Add(time.Second); return at }}
	for _, e := range evs {
		project(f.t, store, proj, e)
	}
}

// The front page draws the pipeline with the live count at each step and
// the failures under the step that failed, by reason, each a link that
// filters; the charts show the finished and failed sagas of the window
// and the step durations.
func TestDashboardPicture(t *testing.T) {
	f := newFixture(t, nil)
	f.clock.Add(time.Minute)
	_, b := f.do("GET", "/", nil)
	page := string(b)
	pipe := between(t, page, `<svg id="pipeline"`, `</svg>`)
	for _, want := range []string{
		`href="/?state=VALIDATING" class="pipe pipe-step" data-state="VALIDATING"`,
		`href="/?state=MERGED" class="pipe pipe-done" data-state="MERGED"`,
		`<title>MERGED: 1 — click to list them</title>`,
		`<title>VALIDATING: 1 — click to list them</title>`,
		`href="/failed?step=VALIDATING" class="pipe pipe-fail"`,
		`checks_failed ×1`,
	} {
		if !strings.Contains(pipe, want) {
			t.Errorf("pipeline lacks %s:\n%s", want, pipe)
		}
	}
	flow := between(t, page, `<svg id="chart-flow"`, `</svg>`)
	if n := strings.Count(flow, `class="bar-ok"`); n != 1 {
		t.Errorf("finished chart: %d green bars, want 1 (one saga merged):\n%s", n, flow)
	}
	if n := strings.Count(flow, `class="bar-fail"`); n != 1 || !strings.Contains(page, `id="spike">most failures: 1 at`) {
		t.Errorf("finished chart: %d red bars, want 1 and the spike named:\n%s", n, flow)
	}
	steps := between(t, page, `<svg id="chart-steps"`, `</svg>`)
	if !strings.Contains(steps, "MERGING p99 1s (1 visits)") {
		t.Errorf("durations chart lacks MERGING's 1s visit:\n%s", steps)
	}
	if !strings.Contains(page, `action="/api/v1/search"`) {
		t.Error("no search form")
	}
	// Clicking a step filters: the box of the filtered state is marked.
	_, b = f.do("GET", "/?state=MERGED", nil)
	if !strings.Contains(between(t, string(b), `<svg id="pipeline"`, `</svg>`), `class="box done on"`) {
		t.Error("the filtered step is not marked in the picture")
	}
	// A day of buckets.
	_, b = f.do("GET", "/?range=day", nil)
	if !strings.Contains(string(b), "per 15m, last day") {
		t.Error("range=day: the chart does not say its buckets")
	}
}

// One saga's page: the PR's fields, the Gantt bars (the failed step red,
// the retry linked), the watchers' deliveries, the trace command, "fix
// the receiver, then retry", and a merge that found the work already in
// the target.
func TestSagaPage(t *testing.T) {
	f := newFixture(t, nil)
	const pr = "acme/hooks#5"
	r := request(pr)
	req := requested(t, r)
	f.project(now,
		req,
		follow(t, req, contracts.TypeMergeValidated, contracts.ServiceValidator, contracts.Validated{Request: r}),
		follow(t, req, contracts.TypeMerged, contracts.ServiceMerger, contracts.Merged{Request: r, MergeSHA: mergeSHA, AlreadyMerged: true}),
		follow(t, req, contracts.TypeStepFailed, contracts.ServiceNotifier, contracts.StepFailed{Request: r, Step: contracts.StateNotifying,
			Code: contracts.CodeWebhookFailed, Retryable: true, Reason: "webhook delivery failed for 1 of 2 watchers: w-down (HTTP 503)"}))
	f.clock.Add(time.Minute)
	path := "/sagas/" + url.PathEscape(pr)
	_, b := f.do("GET", path, nil)
	page := string(b)
	for _, want := range []string{
		`id="fix-receiver"><strong>Fix the receiver, then retry.</strong>`,
		`id="already-merged">It was already merged before this run`,
		`<dt>Strategy</dt><dd>squash</dd>`, `<span class="mono">feature</span> → <span class="mono">main</span>`, headSHA,
		`<td class="mono">w-down</td><td class="state">failed: HTTP 503</td>`,
		`class="bar-gantt failed"`, `NOTIFYING · attempt 1`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("saga page lacks %s", want)
		}
	}
	corr := regexp.MustCompile(`<pre class="cmd" id="trace-cmd">prsaga trace ([0-9a-f-]+)</pre>`).FindStringSubmatch(page)
	if corr == nil || corr[1] != req.ID() {
		t.Errorf("trace command %v, want prsaga trace %s", corr, req.ID())
	}

	// Retry, then the watcher takes it: attempt 2 is drawn below, linked.
	if code, _, _ := f.retry(pr, ""); code != 202 {
		t.Fatalf("retry = %d", code)
	}
	f.project(now.Add(time.Minute),
		follow(t, req, contracts.TypeNotified, contracts.ServiceNotifier, contracts.Notified{Request: r, MergeSHA: mergeSHA,
			Deliveries: []contracts.Delivery{{WatcherID: "w-down", Status: "delivered", Attempts: 2}, {WatcherID: "w-up", Status: "delivered", Attempts: 1}}}),
		follow(t, req, contracts.TypeIndexed, contracts.ServiceIndexer, contracts.Indexed{Request: r, MergeSHA: mergeSHA}))
	f.clock.Add(time.Minute)
	_, b = f.do("GET", path, nil)
	page = string(b)
	gantt := between(t, page, `<svg id="gantt"`, `</svg>`)
	for _, want := range []string{`NOTIFYING · attempt 2`, `class="retry-link"`, `retry by local`, `INDEXING · attempt 2`} {
		if !strings.Contains(gantt, want) {
			t.Errorf("gantt after the retry lacks %s:\n%s", want, gantt)
		}
	}
	if strings.Contains(page, `id="fix-receiver"`) || !strings.Contains(page, `<td class="mono">w-up</td><td class="state">delivered</td><td>1</td>`) {
		t.Error("after the retry: the fix line should be gone and both deliveries shown")
	}
	// The API says it too.
	var s struct {
		AlreadyMerged bool `json:"already_merged"`
	}
	f.getJSON(sagaPath(pr), 200, &s)
	if !s.AlreadyMerged {
		t.Error("GET saga: already_merged not set")
	}
}

func between(t *testing.T, s, from, to string) string {
	t.Helper()
	i := strings.Index(s, from)
	if i < 0 {
		t.Fatalf("page lacks %s", from)
	}
	j := strings.Index(s[i:], to)
	if j < 0 {
		t.Fatalf("page lacks %s after %s", to, from)
	}
	return s[i : i+j]
}
