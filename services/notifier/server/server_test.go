package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/binding/format"
	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/natsembed/natstest"
	"github.com/prsaga/prsaga/platform/service"
	"github.com/prsaga/prsaga/platform/sqlite/sqlitetest"
	"github.com/prsaga/prsaga/services/notifier/server"
	"github.com/prsaga/prsaga/services/notifier/webhook"
)

const wait = 15 * time.Second

// request is one webhook request as a receiver saw it.
type request struct {
	header http.Header
	body   []byte
	failed bool // the receiver answered 500
}

// receiver is a webhook endpoint that records every request; while down it
// answers 500.
type receiver struct {
	mu   sync.Mutex
	down bool
	reqs []request
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs = append(r.reqs, request{header: req.Header.Clone(), body: body, failed: r.down})
	if r.down {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (r *receiver) setDown(down bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.down = down
}

func (r *receiver) requests() []request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]request(nil), r.reqs...)
}

type harness struct {
	t   *testing.T
	bus *bus.Bus
	srv *server.Server
	api *httptest.Server
}

func start(t *testing.T, opts server.Options) *harness {
	t.Helper()
	_, b := natstest.Start(t, bus.Config{AckWait: 5 * time.Second})
	opts.DB = sqlitetest.Open(t, server.Migrations)
	if opts.LookupIP == nil {
		opts.LookupIP = fakeDNS
	}
	srv, err := server.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	srv.Routes(mux)
	api := httptest.NewServer(mux)
	t.Cleanup(api.Close)
	run, err := service.Start(context.Background(), srv.Spec(), b, slogDiscard(), service.Options{
		Backoff: []time.Duration{10 * time.Millisecond}, RelayPoll: 100 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(run.Stop)
	return &harness{t: t, bus: b, srv: srv, api: api}
}

// putWatchers replaces acme/widgets' watchers and returns the API's answer.
func (h *harness) putWatchers(token string, ws ...map[string]string) (int, []byte) {
	h.t.Helper()
	body, _ := json.Marshal(ws)
	req, _ := http.NewRequest(http.MethodPut, h.api.URL+"/api/v1/repos/acme/widgets/watchers", bytes.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := h.api.Client().Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

var request5 = contracts.Request{PRID: "acme/widgets#5", Repo: "acme/widgets", PRNumber: 5, SourceBranch: "f", TargetBranch: "main",
	HeadSHA: "0123456789abcdef0123456789abcdef01234567", Strategy: "merge", Title: "t", RequestedBy: "alice"}

// merged publishes the merger's merged event of run corr (attempt 1), or
// the ledger's replay of it (attempt > 1), and returns it.
func (h *harness) merged(corr string, attempt int) *event.Event {
	h.t.Helper()
	meta := contracts.Meta{CorrelationID: corr, CausationID: corr + ".v", Attempt: attempt}
	id, source := corr+".m", contracts.Source(contracts.ServiceMerger)
	if attempt > 1 {
		id, source, meta.ReplayOf = corr+".m.replay"+strconv.Itoa(attempt), contracts.SourceLedger, corr+".m"
	}
	e, err := contracts.New(id, contracts.TypeMerged, source, request5.PRID, time.Now(),
		contracts.Merged{Request: request5, MergeSHA: "89abcdef0123456789abcdef0123456789abcdef", ChangedPaths: []string{"a.go"}}, meta)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := h.bus.Publish(context.Background(), e); err != nil {
		h.t.Fatal(err)
	}
	return e
}

// answer waits for the notifier's answer (notified or step_failed) to cause.
func (h *harness) answer(cause *event.Event) contracts.Envelope {
	h.t.Helper()
	var env contracts.Envelope
	natstest.WaitEvent(h.t, h.bus, "prsaga.merge.>", wait, func(e *event.Event) bool {
		if e.Source() != contracts.Source(contracts.ServiceNotifier) {
			return false
		}
		got, err := contracts.Open(e)
		if err != nil || got.Meta.CausationID != cause.ID() {
			return false
		}
		env = got
		return true
	})
	if err := env.ValidatePayload(); err != nil {
		h.t.Errorf("answer %s does not validate: %v", env.Event.Type(), err)
	}
	want, _ := contracts.MetaOf(cause)
	if env.Meta.CorrelationID != want.CorrelationID || env.Meta.Attempt != want.Attempt {
		h.t.Errorf("answer meta %+v; want correlation %s, attempt %d", env.Meta, want.CorrelationID, want.Attempt)
	}
	return env
}

func failedAnswer(t *testing.T, env contracts.Envelope) *contracts.StepFailed {
	t.Helper()
	f, ok := env.Payload.(*contracts.StepFailed)
	if !ok {
		t.Fatalf("answer = %s, want step_failed", env.Event.Type())
	}
	if f.Step != contracts.StateNotifying || f.Code != contracts.CodeWebhookFailed || !f.Retryable {
		t.Fatalf("step_failed(%s, %s) retryable=%v: %s; want (NOTIFYING, webhook_failed), retryable", f.Step, f.Code, f.Retryable, f.Reason)
	}
	return f
}

// A watcher down, then up: the step fails naming it; a replay of the step
// (as the ledger sends it) delivers only to it, once, with the delivery id
// of its failed attempts; a second replay delivers nothing.
func TestReplayDeliversOnlyTheMissingWatcher(t *testing.T) {
	h := start(t, server.Options{AllowPrivate: true, Webhook: webhook.Config{MaxAttempts: 2, Backoff: []time.Duration{10 * time.Millisecond}}})
	ok, down := &receiver{}, &receiver{down: true}
	okSrv, downSrv := httptest.NewServer(ok), httptest.NewServer(down)
	t.Cleanup(okSrv.Close)
	t.Cleanup(downSrv.Close)
	code, listed := h.putWatchers("",
		map[string]string{"url": okSrv.URL + "/hook?token=s3cr3t", "secret": "secret-one"},
		map[string]string{"url": downSrv.URL + "/down-hook", "secret": "secret-two"})
	if code != http.StatusOK {
		t.Fatalf("put watchers = %d %s", code, listed)
	}
	var ws []struct{ ID, Host string }
	_ = json.Unmarshal(listed, &ws)
	ids := map[string]string{} // host → watcher id
	for _, w := range ws {
		ids[w.Host] = w.ID
	}
	okID, downID := ids[strings.TrimPrefix(okSrv.URL, "http://")], ids[strings.TrimPrefix(downSrv.URL, "http://")]
	if okID == "" || downID == "" || okID == downID {
		t.Fatalf("watchers answer %s: want an id per host", listed)
	}

	// Attempt 1: the down watcher fails both of its tries.
	first := h.merged("run1", 1)
	f := failedAnswer(t, h.answer(first))
	if !strings.Contains(f.Reason, downID) || strings.Contains(f.Reason, okID) || strings.Contains(f.Reason, "down-hook") || !strings.Contains(f.Reason, "500") {
		t.Errorf("reason %q: want the failing watcher %s and its last error, not %s, and no URL path", f.Reason, downID, okID)
	}
	failedTries := down.requests()
	if len(failedTries) != 2 || len(ok.requests()) != 1 {
		t.Fatalf("after attempt 1: down saw %d requests, ok saw %d; want 2 and 1", len(failedTries), len(ok.requests()))
	}
	deliveryID := failedTries[0].header.Get(webhook.HeaderDelivery)
	if deliveryID == "" || failedTries[1].header.Get(webhook.HeaderDelivery) != deliveryID {
		t.Fatalf("delivery ids of the failed tries: %q, %q; want one id", deliveryID, failedTries[1].header.Get(webhook.HeaderDelivery))
	}

	// The watcher comes back; the ledger replays the step.
	down.setDown(false)
	replay := h.merged("run1", 2)
	env := h.answer(replay)
	n, isNotified := env.Payload.(*contracts.Notified)
	if !isNotified {
		t.Fatalf("answer to the replay = %s %+v, want notified", env.Event.Type(), env.Payload)
	}
	want := map[string]contracts.Delivery{
		okID:   {WatcherID: okID, Status: "delivered", Attempts: 1},
		downID: {WatcherID: downID, Status: "delivered", Attempts: 3},
	}
	if len(n.Deliveries) != 2 || n.Deliveries[0] != want[n.Deliveries[0].WatcherID] || n.Deliveries[1] != want[n.Deliveries[1].WatcherID] {
		t.Errorf("deliveries = %+v; want %+v", n.Deliveries, want)
	}
	if got := ok.requests(); len(got) != 1 {
		t.Errorf("the watcher delivered in attempt 1 received %d requests, want 1", len(got))
	}
	got := down.requests()
	if len(got) != 3 || got[2].failed {
		t.Fatalf("the recovered watcher saw %d requests; want its 2 failed tries and 1 delivery", len(got))
	}
	delivered := got[2]
	if id := delivered.header.Get(webhook.HeaderDelivery); id != deliveryID {
		t.Errorf("delivery id of the replayed delivery %q, want %q as on the failed tries", id, deliveryID)
	}
	if !webhook.Verify([]byte("secret-two"), delivered.body, delivered.header.Get(webhook.HeaderSignature)) {
		t.Error("the replayed delivery's signature does not verify with the watcher's secret")
	}
	if webhook.Verify([]byte("secret-one"), delivered.body, delivered.header.Get(webhook.HeaderSignature)) {
		t.Error("the replayed delivery's signature verifies with another watcher's secret")
	}
	var body event.Event
	if err := format.JSON.Unmarshal(delivered.body, &body); err != nil || body.Type() != contracts.TypeMerged || body.Subject() != request5.PRID || body.Time().IsZero() {
		t.Errorf("delivered body = %s (%v); want the merged CloudEvent of %s with its time", delivered.body, err, request5.PRID)
	}
	first0 := ok.requests()[0]
	if !webhook.Verify([]byte("secret-one"), first0.body, first0.header.Get(webhook.HeaderSignature)) || first0.header.Get(webhook.HeaderDelivery) == deliveryID {
		t.Errorf("first watcher's delivery: signature or delivery id wrong (%q)", first0.header.Get(webhook.HeaderDelivery))
	}
	if ct := delivered.header.Get("Content-Type"); ct != webhook.ContentType {
		t.Errorf("Content-Type %q, want %q", ct, webhook.ContentType)
	}

	// Everything is delivered: another replay sends nothing.
	again := h.merged("run1", 3)
	if env := h.answer(again); env.Event.Type() != contracts.TypeNotified {
		t.Fatalf("answer to the second replay = %s", env.Event.Type())
	}
	if len(ok.requests()) != 1 || len(down.requests()) != 3 {
		t.Errorf("after a second replay: %d and %d requests, want 1 and 3 (nothing resent)", len(ok.requests()), len(down.requests()))
	}
}

// The whole step stays inside RetryBudget however many watchers hang:
// they are notified in parallel under one deadline.
func TestStepStaysInsideItsRetryBudget(t *testing.T) {
	opts := server.Options{
		AllowPrivate: true, Parallel: 2,
		Webhook: webhook.Config{MaxAttempts: 2, Client: &http.Client{Timeout: 300 * time.Millisecond}, Backoff: []time.Duration{100 * time.Millisecond}},
	}
	if got, want := opts.RetryBudget(), 700*time.Millisecond; got != want {
		t.Fatalf("RetryBudget = %s, want %s (2 × 300ms + 100ms)", got, want)
	}
	h := start(t, opts)
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(hang.Close)
	t.Cleanup(func() { close(release) }) // before hang.Close, which waits for handlers
	const watchers = 12                  // 6 rounds of 2: 4.2s if each had its own budget
	var ws []map[string]string
	for i := range watchers {
		ws = append(ws, map[string]string{"url": hang.URL + "/" + strconv.Itoa(i), "secret": "secret-" + strconv.Itoa(i)})
	}
	if code, body := h.putWatchers("", ws...); code != http.StatusOK {
		t.Fatalf("put watchers = %d %s", code, body)
	}
	began := time.Now()
	f := failedAnswer(t, h.answer(h.merged("run1", 1)))
	if d := time.Since(began); d > opts.RetryBudget()+2*time.Second {
		t.Errorf("the step answered after %s; its retry budget is %s", d, opts.RetryBudget())
	}
	if !strings.Contains(f.Reason, strconv.Itoa(watchers)+" of "+strconv.Itoa(watchers)) || !strings.Contains(f.Reason, "retry budget") {
		t.Errorf("reason %q: want all %d watchers failed, some by the spent budget", f.Reason, watchers)
	}
}

// Loopback, private and other non-public receivers are refused when they
// are put, naming the setting that allows them, and nothing is stored;
// with AllowPrivate they are accepted. (The dial-time guard, which covers
// names that resolve differently later, is tested in package webhook.)
func TestPrivateReceiversRefused(t *testing.T) {
	h := start(t, server.Options{Webhook: webhook.Config{MaxAttempts: 3, Backoff: []time.Duration{time.Millisecond}}})
	for _, u := range []string{"http://127.0.0.1:9/a", "http://localhost:9/b", "http://10.1.2.3/c", "http://[::1]:9/d", "http://169.254.169.254/e", "https://hooks.internal.test/f"} {
		code, body := h.putWatchers("", map[string]string{"url": u, "secret": "secret-one"})
		if code != http.StatusBadRequest || !bytes.Contains(body, []byte(webhook.AllowPrivateEnv)) || bytes.Contains(body, []byte("AllowPrivate\"")) {
			t.Errorf("put %s = %d %s; want 400 naming %s", u, code, body, webhook.AllowPrivateEnv)
		}
	}
	resp, err := h.api.Client().Get(h.api.URL + "/api/v1/repos/acme/widgets/watchers")
	if err != nil {
		t.Fatal(err)
	}
	listed, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.TrimSpace(string(listed)) != "[]" {
		t.Errorf("after refused puts the watchers are %s, want none", listed)
	}

	allowed := start(t, server.Options{AllowPrivate: true})
	if code, body := allowed.putWatchers("", map[string]string{"url": "http://localhost:9/b", "secret": "secret-one"}); code != http.StatusOK {
		t.Errorf("put a loopback watcher with AllowPrivate = %d %s, want 200", code, body)
	}
}

// fakeDNS answers for the names the tests use, without a DNS server:
// *.internal.test resolves to a private address, anything else is unknown.
func fakeDNS(_ context.Context, host string) ([]netip.Addr, error) {
	if strings.HasSuffix(host, ".internal.test") {
		return []netip.Addr{netip.MustParseAddr("10.9.8.7")}, nil
	}
	return nil, errors.New("no such host")
}

func TestWatchersAPI(t *testing.T) {
	h := start(t, server.Options{OperatorTokens: []string{"op-token"}})
	hook := map[string]string{"url": "https://hooks.example.com/p/T0K3N?key=K3Y", "secret": "a-long-secret"}
	if code, _ := h.putWatchers("", hook); code != http.StatusUnauthorized {
		t.Errorf("put watchers without a token = %d, want 401", code)
	}
	code, body := h.putWatchers("op-token", hook)
	if code != http.StatusOK {
		t.Fatalf("put watchers = %d %s", code, body)
	}
	list := func(token string) (int, []byte) {
		req, _ := http.NewRequest(http.MethodGet, h.api.URL+"/api/v1/repos/acme/widgets/watchers", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := h.api.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	// Reading the list needs a token too when one is configured.
	if code, b := list(""); code != http.StatusUnauthorized {
		t.Errorf("list watchers without a token = %d %s, want 401", code, b)
	}
	code, listed := list("op-token")
	if code != http.StatusOK {
		t.Fatalf("list watchers = %d %s", code, listed)
	}
	for _, b := range [][]byte{body, listed} {
		if !bytes.Contains(b, []byte(`"host": "hooks.example.com"`)) || bytes.Contains(b, []byte("T0K3N")) ||
			bytes.Contains(b, []byte("K3Y")) || bytes.Contains(b, []byte("a-long-secret")) || bytes.Contains(b, []byte("/p/")) {
			t.Errorf("watchers answer %s: want id and host only, no path, query or secret", b)
		}
	}
	for _, tc := range []struct {
		name string
		ws   []map[string]string
	}{
		{"bad scheme", []map[string]string{{"url": "ftp://x.example.com/", "secret": "a-long-secret"}}},
		{"user info", []map[string]string{{"url": "https://u:p@x.example.com/", "secret": "a-long-secret"}}},
		{"short secret", []map[string]string{{"url": "https://x.example.com/", "secret": "short"}}},
		{"twice", []map[string]string{hook, hook}},
	} {
		if code, body := h.putWatchers("op-token", tc.ws...); code != http.StatusBadRequest || bytes.Contains(body, []byte("u:p")) {
			t.Errorf("%s: put = %d %s; want 400 without quoting the URL", tc.name, code, body)
		}
	}
}

func TestOptions(t *testing.T) {
	err := server.Options{Parallel: -1, Webhook: webhook.Config{MaxAttempts: -1}}.Validate()
	for _, want := range []string{"DB is required", "Parallel", "max attempts"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v; want a problem with %s", err, want)
		}
	}
	if _, err := server.New(server.Options{}); err == nil {
		t.Error("New without a DB succeeded")
	}
	// The default budget: 3 attempts of 10s, 200ms and 1s between them.
	if got, want := (server.Options{}).RetryBudget(), 31200*time.Millisecond; got != want {
		t.Errorf("default RetryBudget = %s, want %s", got, want)
	}
	h := start(t, server.Options{Webhook: webhook.Config{MaxAttempts: 1, Client: &http.Client{Timeout: time.Second}}})
	if got := h.srv.RetryBudget(); got != time.Second {
		t.Errorf("Server.RetryBudget = %s, want 1s", got)
	}
}
