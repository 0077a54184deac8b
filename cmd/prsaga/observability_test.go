package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/prsaga/prsaga/cmd/prsaga/internal/client"
	"github.com/prsaga/prsaga/cmd/prsaga/internal/stack"
	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/logging/logtest"
	"github.com/prsaga/prsaga/platform/runner"
	"github.com/prsaga/prsaga/platform/step"
)

// spanService is the service.name of a span's resource.
func spanService(s tracetest.SpanStub) string {
	for _, kv := range s.Resource.Attributes() {
		if kv.Key == "service.name" {
			return kv.Value.AsString()
		}
	}
	return ""
}

func spanAttr(s tracetest.SpanStub, key string) string {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value.Emit()
		}
	}
	return ""
}

// One saga, traced: every service's spans share one trace id and chain
// parent to child in step order — validator → merger → notifier →
// indexer, the ledger's span of each step's event a child of that step's
// span, each relay's publish span a child of the handler that emitted the
// event. The dashboard's PR page and the log lines show the trace id.
func TestObservabilityOneSagaIsOneTrace(t *testing.T) {
	cfg := testConfig(t)
	_, head := makeRepo(t, cfg.ReposDir, "acme/widgets", "feature/hello")
	exp := tracetest.NewInMemoryExporter()
	st := startWith(t, stack.Options{Config: cfg, SpanExporter: exp})
	c := client.New(st.URL, "")
	setCI(t, c, "acme/widgets", head, "success")
	const pr = "acme/widgets#42"
	acc := mustMerge(t, c, request("acme/widgets", 42, "feature/hello", head))
	waitState(t, c, pr, contracts.StateMerged, 1)

	// The spans of the run, keyed by service and operation. A span ends
	// once its message is acked, a moment after the ledger's commit.
	type key struct{ service, name string }
	want := []key{
		{"validator", "process prsaga.merge.requested"},
		{"validator", "send prsaga.merge.validated"},
		{"merger", "process prsaga.merge.validated"},
		{"merger", "send prsaga.merge.merged"},
		{"notifier", "process prsaga.merge.merged"},
		{"notifier", "send prsaga.merge.notified"},
		{"indexer", "process prsaga.merge.notified"},
		{"indexer", "send prsaga.merge.indexed"},
		{"ledger", "process prsaga.merge.requested"},
		{"ledger", "process prsaga.merge.validated"},
		{"ledger", "process prsaga.merge.merged"},
		{"ledger", "process prsaga.merge.notified"},
		{"ledger", "process prsaga.merge.indexed"},
		{"ledger", "send prsaga.saga.state_changed"},
	}
	var spans map[key]tracetest.SpanStub
	deadline := time.Now().Add(10 * time.Second)
	for {
		spans = map[key]tracetest.SpanStub{}
		for _, s := range exp.GetSpans() {
			if spanAttr(s, "prsaga.correlation_id") == acc.CorrelationID {
				spans[key{spanService(s), s.Name}] = s
			}
		}
		missing := 0
		for _, k := range want {
			if _, ok := spans[k]; !ok {
				missing++
			}
		}
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of the run's spans missing after 10s; have %v", missing, keysOf(spans))
		}
		time.Sleep(50 * time.Millisecond)
	}
	traceID := spans[want[0]].SpanContext.TraceID()
	for k, s := range spans {
		if s.SpanContext.TraceID() != traceID {
			t.Errorf("%v is in trace %s, want %s", k, s.SpanContext.TraceID(), traceID)
		}
	}
	parentIs := func(child, parent key) {
		t.Helper()
		if got, want := spans[child].Parent.SpanID(), spans[parent].SpanContext.SpanID(); got != want {
			t.Errorf("parent of %v is %s, want %v (%s)", child, got, parent, want)
		}
	}
	chain := []key{
		{"validator", "process prsaga.merge.requested"},
		{"merger", "process prsaga.merge.validated"},
		{"notifier", "process prsaga.merge.merged"},
		{"indexer", "process prsaga.merge.notified"},
		{"ledger", "process prsaga.merge.indexed"},
	}
	for i := 1; i < len(chain); i++ {
		parentIs(chain[i], chain[i-1])
	}
	for i, typ := range []string{"validated", "merged", "notified"} {
		parentIs(key{"ledger", "process prsaga.merge." + typ}, chain[i])
		parentIs(key{chain[i].service, "send prsaga.merge." + typ}, chain[i])
	}
	parentIs(key{"indexer", "send prsaga.merge.indexed"}, chain[3])
	// The request carried no trace context: the validator's and the
	// ledger's spans of it hang off the run's derived parent.
	v, l := spans[chain[0]], spans[key{"ledger", "process prsaga.merge.requested"}]
	if !v.Parent.IsRemote() || v.Parent.SpanID() != l.Parent.SpanID() {
		t.Errorf("the request's spans: validator parent %v, ledger parent %v, want one remote parent", v.Parent, l.Parent)
	}
	if v.SpanKind != trace.SpanKindConsumer || spans[key{"validator", "send prsaga.merge.validated"}].SpanKind != trace.SpanKindProducer {
		t.Errorf("span kinds: process %v, send %v", v.SpanKind, spans[key{"validator", "send prsaga.merge.validated"}].SpanKind)
	}

	// The dashboard's PR page shows the trace id.
	resp, err := http.Get(st.URL + "/sagas/" + url.PathEscape(pr))
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), `id="trace-id"`) || !strings.Contains(string(page), traceID.String()) {
		t.Errorf("the PR page does not show trace %s", traceID)
	}
	// Every service's handling lines carry it too.
	for _, svc := range stack.AllServices {
		if b := readFile(t, filepath.Join(cfg.LogDir, svc+".jsonl")); !strings.Contains(b, `"trace_id":"`+traceID.String()+`"`) {
			t.Errorf("%s's log lines lack trace_id %s", svc, traceID)
		}
	}
}

func keysOf[K comparable, V any](m map[K]V) []K {
	var out []K
	for k := range m {
		out = append(out, k)
	}
	return out
}

// scrape reads /metrics as Prometheus would.
func scrape(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET /metrics: %d", resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics is not the Prometheus text format: %v", err)
	}
	return fams
}

// value is the value of the series of a family with exactly these labels
// (a histogram's sample count); -1 when there is none.
func value(fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	f := fams[name]
	if f == nil {
		return -1
	}
	want := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		want[labels[i]] = labels[i+1]
	}
next:
	for _, m := range f.GetMetric() {
		if len(m.GetLabel()) != len(want) {
			continue
		}
		for _, l := range m.GetLabel() {
			if want[l.GetName()] != l.GetValue() {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue()
		case m.Gauge != nil:
			return m.GetGauge().GetValue()
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount())
		}
	}
	return -1
}

// A few sagas — two merged (one of them after a redelivery), one failing
// its checks — and one undecodable message: /metrics counts exactly that.
func TestObservabilityMetricsAfterAFewSagas(t *testing.T) {
	cfg := testConfig(t)
	_, head := makeRepo(t, cfg.ReposDir, "acme/widgets", "feature/hello")
	_, head2 := makeRepo(t, cfg.ReposDir, "acme/gadgets", "feature/hello")
	_, broken := makeRepo(t, cfg.ReposDir, "acme/broken", "feature/hello")
	// The merger's first delivery of acme/gadgets#2 fails once: one
	// redelivery. The merger runs in a stack (a process) of its own, so
	// that the fault hook sees only its deliveries, and has its own
	// /metrics, as it would in production.
	var failed atomic.Bool
	fault := func(point string, env contracts.Envelope) error {
		if point == runner.FaultAfterEffect && env.Event.Type() == contracts.TypeMergeValidated &&
			env.Event.Subject() == "acme/gadgets#2" && failed.CompareAndSwap(false, true) {
			return errors.New("injected: try again")
		}
		return nil
	}
	st := startWith(t, stack.Options{Config: cfg, Services: []string{"validator", "notifier", "indexer", "ledger"}})
	mcfg := cfg
	mcfg.NATSURL = st.NATS.Addr()
	merger := startWith(t, stack.Options{Config: mcfg, Services: []string{"merger"}, Fault: fault})
	c := client.New(st.URL, "")
	ctx := context.Background()
	for _, s := range []struct{ repo, sha, state string }{{"acme/widgets", head, "success"}, {"acme/gadgets", head2, "success"}, {"acme/broken", broken, "failure"}} {
		setCI(t, c, s.repo, s.sha, s.state)
	}
	for _, r := range []contracts.Request{request("acme/widgets", 1, "feature/hello", head), request("acme/gadgets", 2, "feature/hello", head2),
		request("acme/broken", 3, "feature/hello", broken)} {
		mustMerge(t, c, r)
	}
	// Not a CloudEvent at all: both consumers of the subject dead-letter it.
	if _, err := st.Bus.JS.PublishMsg(ctx, &nats.Msg{Subject: contracts.SubjectMergeRequested, Data: []byte("garbage"),
		Header: nats.Header{"Nats-Msg-Id": {"garbage-1"}}}); err != nil {
		t.Fatal(err)
	}
	waitState(t, c, "acme/widgets#1", contracts.StateMerged, 1)
	waitState(t, c, "acme/gadgets#2", contracts.StateMerged, 1)
	waitState(t, c, "acme/broken#3", contracts.StateMergeFailed, 1)

	type series struct {
		name   string
		labels []string
		want   float64
	}
	checks := []series{
		{"prsaga_saga_transitions_total", []string{"from", "none", "to", "VALIDATING"}, 3},
		{"prsaga_saga_transitions_total", []string{"from", "VALIDATING", "to", "MERGING"}, 2},
		{"prsaga_saga_transitions_total", []string{"from", "MERGING", "to", "NOTIFYING"}, 2},
		{"prsaga_saga_transitions_total", []string{"from", "NOTIFYING", "to", "INDEXING"}, 2},
		{"prsaga_saga_transitions_total", []string{"from", "INDEXING", "to", "MERGED"}, 2},
		{"prsaga_saga_transitions_total", []string{"from", "VALIDATING", "to", "MERGE_FAILED"}, 1},
		{"prsaga_saga_merge_failed_total", []string{"step", "VALIDATING", "code", "checks_failed"}, 1},
		{"prsaga_step_duration_seconds", []string{"step", "VALIDATING"}, 3},
		{"prsaga_step_duration_seconds", []string{"step", "MERGING"}, 2},
		{"prsaga_step_duration_seconds", []string{"step", "NOTIFYING"}, 2},
		{"prsaga_step_duration_seconds", []string{"step", "INDEXING"}, 2},
		{"prsaga_consumer_redeliveries_total", []string{"consumer", "notifier"}, 0},
		{"prsaga_consumer_redeliveries_total", []string{"consumer", "ledger"}, 0},
		{"prsaga_dlq_messages_total", []string{"consumer", "validator"}, 1},
		{"prsaga_dlq_messages_total", []string{"consumer", "ledger"}, 1},
		{"prsaga_dlq_messages_total", []string{"consumer", "merger"}, 0},
		{"prsaga_watchdog_timeouts_total", []string{"step", "MERGING"}, 0},
		{"prsaga_sagas_in_flight", []string{"state", "VALIDATING"}, 0},
		{"prsaga_sagas_in_flight", []string{"state", "MERGING"}, 0},
		{"prsaga_sagas_in_flight_oldest_age_seconds", []string{"state", "INDEXING"}, 0},
		{"prsaga_events_handled_total", []string{"consumer", "indexer", "outcome", "acked"}, 2},
	}
	for _, svc := range []string{"validator", "notifier", "indexer", "ledger"} {
		checks = append(checks, series{"prsaga_outbox_pending", []string{"service", svc}, 0},
			series{"prsaga_outbox_oldest_age_seconds", []string{"service", svc}, 0})
	}
	// The merger's own process.
	mergerChecks := []series{
		{"prsaga_consumer_redeliveries_total", []string{"consumer", "merger"}, 1},
		{"prsaga_events_handled_total", []string{"consumer", "merger", "outcome", "retry"}, 1},
		{"prsaga_events_handled_total", []string{"consumer", "merger", "outcome", "acked"}, 2},
		{"prsaga_events_published_total", []string{"service", "merger", "result", "ok"}, 2},
		{"prsaga_outbox_pending", []string{"service", "merger"}, 0},
		{"prsaga_saga_transitions_total", []string{"from", "none", "to", "VALIDATING"}, -1}, // no ledger here
	}
	// Counters move a moment after the state the API shows (the relays
	// mark rows sent, the last acks land): wait for the expected values.
	var fams map[string]*dto.MetricFamily
	deadline := time.Now().Add(10 * time.Second)
	for {
		fams = scrape(t, st.URL)
		var wrong []string
		for _, s := range checks {
			if got := value(fams, s.name, s.labels...); got != s.want {
				wrong = append(wrong, fmt.Sprintf("%s%v = %v, want %v", s.name, s.labels, got, s.want))
			}
		}
		mfams := scrape(t, merger.URL)
		for _, s := range mergerChecks {
			if got := value(mfams, s.name, s.labels...); got != s.want {
				wrong = append(wrong, fmt.Sprintf("merger's %s%v = %v, want %v", s.name, s.labels, got, s.want))
			}
		}
		if len(wrong) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the sagas:\n%s", strings.Join(wrong, "\n"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if fams["go_goroutines"] == nil {
		t.Error("/metrics lacks the Go collector")
	}
	// Two stacks in one process each have their own registry.
	cfg2 := testConfig(t)
	other := startWith(t, stack.Options{Config: cfg2})
	if got := value(scrape(t, other.URL), "prsaga_saga_transitions_total", "from", "none", "to", "VALIDATING"); got != -1 {
		t.Errorf("a fresh stack reports %v transitions: registries are shared", got)
	}
}

// `prsaga trace --follow` tails a real run from before its first event to
// its end and shows lines from all five services, in order; `prsaga
// trace` afterwards prints the timeline with the steps and the trace id.
func TestObservabilityTraceFollowsARun(t *testing.T) {
	cfg := testConfig(t)
	_, head := makeRepo(t, cfg.ReposDir, "acme/widgets", "feature/hello")
	st := startWith(t, stack.Options{Config: cfg})
	c := client.New(st.URL, "")
	ctx := context.Background()
	setCI(t, c, "acme/widgets", head, "success")
	id := step.NewID()
	e, err := contracts.NewRequested(id, "https://forge.example/acme", time.Now(), request("acme/widgets", 42, "feature/hello", head), "")
	if err != nil {
		t.Fatal(err)
	}
	fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var out, errOut logtest.Buffer
	var code int
	var wg sync.WaitGroup
	wg.Go(func() {
		code = run(fctx, []string{"trace", id, "--follow", "--json", "--poll", "50ms", "--api", st.URL, "--logs", cfg.LogDir},
			func(string) string { return "" }, &out, &errOut)
	})
	// Following before the run starts: its first poll finds no run yet.
	waitCond(t, 10*time.Second, "trace --follow polled once", func() bool {
		return strings.Contains(errOut.String(), "has no run "+id+" (yet)")
	})
	if err := st.Bus.Publish(ctx, e); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if fctx.Err() != nil {
		t.Fatalf("trace --follow did not end with the run:\n%s\n%s", out.String(), errOut.String())
	}
	if code != exitOK {
		t.Fatalf("trace --follow: exit %d\n%s", code, errOut.String())
	}
	var entries []traceEntry
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	for sc.Scan() {
		var en traceEntry
		if err := json.Unmarshal(sc.Bytes(), &en); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		entries = append(entries, en)
	}
	firstLog := map[string]int{}
	for i, en := range entries {
		if _, ok := firstLog[en.Service]; !ok && en.Kind == "log" {
			firstLog[en.Service] = i
		}
		if i > 0 && en.Time.Before(entries[i-1].Time) {
			t.Errorf("entry %d (%s %s) before the one above it", i, en.Service, en.What)
		}
	}
	// Every service logged the run. Their lines are not in pipeline order
	// between services: a step logs its outcome after its commit, while the
	// relay may already have published its event and the next step logged
	// its own. The ledger's transitions are the run's order.
	for _, svc := range []string{"ledger", "validator", "merger", "notifier", "indexer"} {
		if _, ok := firstLog[svc]; !ok {
			t.Fatalf("no log line of %s in the trace:\n%s", svc, out.String())
		}
	}
	var moves []string
	for _, en := range entries {
		if en.Kind == "transition" {
			moves = append(moves, en.ToState)
		}
	}
	if want := []string{"VALIDATING", "MERGING", "NOTIFYING", "INDEXING", "MERGED"}; !slices.Equal(moves, want) {
		t.Errorf("the trace's transitions went %v, want %v", moves, want)
	}
	if last := entries[len(entries)-1]; runState(entries) != "MERGED" {
		t.Errorf("the trace ended at %+v, state %q, want MERGED", last, runState(entries))
	}

	code, text, errText := runCLI(t, "trace", id, "--api", st.URL, "--logs", cfg.LogDir)
	if code != exitOK {
		t.Fatalf("trace: exit %d %s", code, errText)
	}
	for _, want := range []string{"run " + id + " of acme/widgets#42: MERGED", "trace ", "steps:", "VALIDATING", "INDEXING", "total",
		"validator", "merger", "notifier", "indexer", "saga_transition"} {
		if !strings.Contains(text, want) {
			t.Errorf("trace output lacks %q:\n%s", want, text)
		}
	}
	if dir := os.Getenv("PRSAGA_ARTIFACTS"); dir != "" {
		_ = os.MkdirAll(dir, 0o755)
		_ = os.WriteFile(filepath.Join(dir, "trace-sample.txt"), []byte(text), 0o644)
	}
	t.Logf("prsaga trace %s:\n%s", id, text)
}
