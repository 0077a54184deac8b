package server_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/gittest"
	"github.com/prsaga/prsaga/platform/httpx"
	"github.com/prsaga/prsaga/platform/logging/logtest"
	"github.com/prsaga/prsaga/platform/natsembed/natstest"
	"github.com/prsaga/prsaga/platform/service"
	psqlite "github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/platform/sqlite/sqlitetest"
	"github.com/prsaga/prsaga/platform/step"
	"github.com/prsaga/prsaga/services/validator"
	"github.com/prsaga/prsaga/services/validator/server"
	vsqlite "github.com/prsaga/prsaga/services/validator/sqlite"
)

const wait = 15 * time.Second

// harness is a running validator: embedded JetStream, its SQLite database,
// a bare repository acme/widgets, and its HTTP routes.
type harness struct {
	t    *testing.T
	bus  *bus.Bus
	db   *psqlite.DB
	repo *gittest.Repo
	http *httptest.Server
	out  *watcher
	logs *logtest.Buffer // the validator's log lines (also in the test's output)
}

func startValidator(t *testing.T) *harness {
	t.Helper()
	return startValidatorWith(t, server.Options{})
}

// startValidatorWith starts the validator with opts, its DB, ReposDir and
// tokens filled in.
func startValidatorWith(t *testing.T, opts server.Options) *harness {
	t.Helper()
	ctx := context.Background()
	_, b := natstest.Start(t, bus.Config{AckWait: 5 * time.Second})
	db := sqlitetest.Open(t, server.Migrations)
	reposDir := t.TempDir()
	repo := gittest.NewBare(t, reposDir, "acme/widgets")
	opts.DB, opts.ReposDir = db, reposDir
	opts.OperatorTokens, opts.StatusTokens = httpx.Tokens{"op-token"}, httpx.Tokens{"ci-token"}
	srv, err := server.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	logs := &logtest.Buffer{}
	log := slog.New(slog.NewJSONHandler(io.MultiWriter(t.Output(), logs), &slog.HandlerOptions{Level: slog.LevelDebug}))
	run, err := service.Start(ctx, srv.Spec(), b, log, service.Options{
		Backoff: []time.Duration{100 * time.Millisecond}, RelayPoll: 100 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(run.Stop)
	mux := http.NewServeMux()
	srv.Routes(mux)
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	return &harness{t: t, bus: b, db: db, repo: repo, http: hs, out: watch(t, b), logs: logs}
}

func (h *harness) postStatus(sha, context, state string) {
	h.t.Helper()
	h.do("POST", "/api/v1/repos/acme/widgets/statuses/"+sha, "ci-token",
		`{"context":"`+context+`","state":"`+state+`"}`, http.StatusCreated)
}

func (h *harness) do(method, path, token, body string, want int) {
	h.t.Helper()
	req, err := http.NewRequest(method, h.http.URL+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := h.http.Client().Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != want {
		h.t.Fatalf("%s %s = %d, want %d", method, path, resp.StatusCode, want)
	}
}

// getJSON GETs path and compares the compact JSON answer with want.
func (h *harness) getJSON(path, want string) {
	h.t.Helper()
	req, err := http.NewRequest(http.MethodGet, h.http.URL+path, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer op-token") // reads need a token when one is set
	resp, err := h.http.Client().Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	var v any
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		h.t.Fatal(err)
	}
	got, _ := json.Marshal(v)
	if resp.StatusCode != http.StatusOK || string(got) != want {
		h.t.Errorf("GET %s = %d %s\nwant 200 %s", path, resp.StatusCode, got, want)
	}
}

// request publishes a merge request of PR #n and returns its id (the run).
func (h *harness) request(n int, source, target, head, strategy string) string {
	h.t.Helper()
	id := step.NewID()
	e, err := contracts.NewRequested(id, "https://forge.example/test", time.Now(), contracts.Request{
		PRID: contracts.PRID("acme/widgets", n), Repo: "acme/widgets", PRNumber: n,
		SourceBranch: source, TargetBranch: target, HeadSHA: head,
		Strategy: strategy, Title: "PR", RequestedBy: "alice",
	}, "")
	if err != nil {
		h.t.Fatal(err)
	}
	h.publish(e)
	return id
}

func (h *harness) publish(e *event.Event) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := h.bus.Publish(ctx, e); err != nil {
		h.t.Fatal(err)
	}
}

// follow publishes an event of another service in run (correlation id) of PR #n.
func (h *harness) follow(typ, service string, n int, run string, attempt int, payload any) *event.Event {
	h.t.Helper()
	e, err := contracts.New(step.NewID(), typ, contracts.Source(service), contracts.PRID("acme/widgets", n),
		time.Now(), payload, contracts.Meta{CorrelationID: run, CausationID: run, Attempt: attempt})
	if err != nil {
		h.t.Fatal(err)
	}
	h.publish(e)
	return e
}

func (h *harness) lock(n int) validator.Lock {
	h.t.Helper()
	l, err := vsqlite.Lock(context.Background(), h.db, contracts.PRID("acme/widgets", n))
	if err != nil {
		h.t.Fatal(err)
	}
	return l
}

// waitLock polls the lock row until ok accepts it.
func (h *harness) waitLock(n int, what string, ok func(validator.Lock) bool) {
	h.t.Helper()
	deadline := time.Now().Add(wait)
	for {
		l := h.lock(n)
		if ok(l) {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("lock of PR #%d = %+v; still not %s after %s", n, l, what, wait)
		}
		time.Sleep(10 * time.Millisecond) // polling interval, not synchronisation
	}
}

// waitProcessed polls until the lock consumer has handled event id.
func (h *harness) waitProcessed(id string) {
	h.t.Helper()
	deadline := time.Now().Add(wait)
	for {
		done, err := h.db.Processed(context.Background(), contracts.ConsumerValidatorLock, id)
		if err != nil {
			h.t.Fatal(err)
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("lock consumer has not processed %s after %s", id, wait)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// watcher reads the validator's answers (validated, step_failed) from the
// start of the stream with one ordered consumer, keyed by causation id.
type watcher struct {
	t    *testing.T
	cons jetstream.Consumer
	seen map[string]contracts.Envelope
}

func watch(t *testing.T, b *bus.Bus) *watcher {
	t.Helper()
	c, err := b.JS.OrderedConsumer(context.Background(), contracts.Stream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{contracts.SubjectMergeValidated, contracts.StepFailedSubject(contracts.ServiceValidator)},
	})
	if err != nil {
		t.Fatal(err)
	}
	return &watcher{t: t, cons: c, seen: map[string]contracts.Envelope{}}
}

// answer returns the validator's answer to event id, waiting for it.
func (w *watcher) answer(id string) contracts.Envelope {
	w.t.Helper()
	deadline := time.Now().Add(wait)
	for {
		if env, ok := w.seen[id]; ok {
			return env
		}
		left := time.Until(deadline)
		if left <= 0 {
			w.t.Fatalf("no answer to %s within %s", id, wait)
		}
		m, err := w.cons.Next(jetstream.FetchMaxWait(left))
		if err != nil {
			w.t.Fatalf("no answer to %s within %s: %v", id, wait, err)
		}
		e, err := bus.Decode(m.Headers(), m.Data())
		if err != nil {
			w.t.Fatalf("undecodable answer: %v", err)
		}
		env, err := contracts.Open(e)
		if err != nil {
			w.t.Fatalf("answer does not open: %v", err)
		}
		if err := env.ValidatePayload(); err != nil {
			w.t.Errorf("answer %s has an invalid payload: %v", e.Type(), err)
		}
		if e.Source() != contracts.Source(contracts.ServiceValidator) {
			continue // another service's step_failed
		}
		w.seen[env.Meta.CausationID] = env
	}
}

func (w *watcher) failed(id, code string) *contracts.StepFailed {
	w.t.Helper()
	return w.failedIn(id, id, code)
}

// failedIn is failed for a request of run (a replay's id is not its run's).
func (w *watcher) failedIn(id, run, code string) *contracts.StepFailed {
	w.t.Helper()
	env := w.answer(id)
	f, ok := env.Payload.(*contracts.StepFailed)
	if !ok {
		w.t.Fatalf("answer to %s is %s, want step_failed %s", id, env.Event.Type(), code)
	}
	if f.Code != code || f.Step != contracts.StateValidating {
		w.t.Fatalf("answer to %s: step_failed(%s, %s): %s; want (VALIDATING, %s)", id, f.Step, f.Code, f.Reason, code)
	}
	if env.Meta.CorrelationID != run {
		w.t.Errorf("step_failed %s carries correlation id %s, want the request's %s", code, env.Meta.CorrelationID, run)
	}
	return f
}

func (w *watcher) validated(id string) *contracts.Validated {
	w.t.Helper()
	return w.validatedIn(id, id)
}

// validatedIn is validated for a request of run (a replay's id is not its run's).
func (w *watcher) validatedIn(id, run string) *contracts.Validated {
	w.t.Helper()
	env := w.answer(id)
	v, ok := env.Payload.(*contracts.Validated)
	if !ok {
		raw, _ := json.Marshal(env.Payload)
		w.t.Fatalf("answer to %s is %s %s, want validated", id, env.Event.Type(), raw)
	}
	if env.Meta.CorrelationID != run || env.Meta.CausationID != id {
		w.t.Errorf("validated: correlation %s, causation %s; want %s, %s", env.Meta.CorrelationID, env.Meta.CausationID, run, id)
	}
	return v
}

func TestValidatorComponent(t *testing.T) {
	h := startValidator(t)
	base := h.repo.Commit("main", "base")
	one := h.repo.Commit("feature/one", "one")
	two := h.repo.Commit("feature/two", "two")
	h.repo.Commit("release", "release base")
	three := h.repo.Commit("feature/three", "three")

	// A green required check validates, pins the head and takes the lock.
	h.postStatus(one, "ci", "pending")
	h.postStatus(one, "ci", "success") // the latest status wins
	r1 := h.request(1, "feature/one", "main", one, "merge")
	v := h.out.validated(r1)
	if v.HeadSHA != one || v.BaseSHA != base || len(v.Checks) != 1 || v.Checks[0] != (contracts.Check{Context: "ci", State: "success"}) {
		t.Errorf("validated = head %s base %s checks %v; want head %s base %s checks [{ci success}]", v.HeadSHA, v.BaseSHA, v.Checks, one, base)
	}
	if l := h.lock(1); l != (validator.Lock{Holder: r1, Attempt: 1}) {
		t.Errorf("lock after validation = %+v, want held by %s", l, r1)
	}

	// A failed required check answers checks_failed.
	h.postStatus(two, "ci", "failure")
	r2 := h.request(2, "feature/two", "main", two, "squash")
	if f := h.out.failed(r2, contracts.CodeChecksFailed); !strings.Contains(f.Reason, "ci (failure)") {
		t.Errorf("checks_failed reason %q does not name ci", f.Reason)
	}

	// Protection set through the API is what the decision reads.
	h.do("PUT", "/api/v1/repos/acme/widgets/protection/release", "op-token", `{"required_contexts":["ci","lint"]}`, http.StatusOK)
	h.postStatus(three, "ci", "success")
	r3 := h.request(3, "feature/three", "release", three, "merge")
	if f := h.out.failed(r3, contracts.CodeChecksPending); !strings.Contains(f.Reason, "lint (missing)") {
		t.Errorf("checks_pending reason %q does not name lint as missing", f.Reason)
	}

	// Invalid fields, missing branches, a moved head.
	bad := h.request(4, "feature/two", "main", two, "rebase")
	if f := h.out.failed(bad, contracts.CodeInvalidRequest); f.Retryable || !strings.Contains(f.Reason, "strategy") {
		t.Errorf("invalid_request = retryable %v, reason %q; want false and naming strategy", f.Retryable, f.Reason)
	}
	gone := h.request(5, "feature/gone", "main", two, "merge")
	h.out.failed(gone, contracts.CodeNotFound)
	moved := h.request(6, "feature/two", "main", one, "merge")
	h.out.failed(moved, contracts.CodeHeadMoved)

	// A second run of PR #1 while run 1 holds the lock: in_progress with the
	// second run's correlation id, and the lock stays with run 1 even after
	// the lock consumer has seen that step_failed.
	r1b := h.request(1, "feature/one", "main", one, "merge")
	f := h.out.failed(r1b, contracts.CodeInProgress)
	if !strings.Contains(f.Reason, r1) {
		t.Errorf("in_progress reason %q does not name the holder %s", f.Reason, r1)
	}
	h.waitProcessed(h.out.answer(r1b).Event.ID())
	// A timeout never releases: the step may still be working.
	to := h.follow(contracts.TypeTimedOut, contracts.ServiceLedger, 1, r1, 1, contracts.TimedOut{
		Request: v.Request, Step: contracts.StateMerging, Deadline: time.Now(), LastEventID: r1, Diagnosis: "slow",
	})
	h.waitProcessed(to.ID())
	if l := h.lock(1); l.Holder != r1 {
		t.Fatalf("lock after in_progress and timed_out = %+v, want still held by %s", l, r1)
	}

	// Run 1's merged marks the PR merged for good and ends the lock (design
	// §4: nothing waits for the run's indexed): later requests are answered
	// already_merged.
	h.follow(contracts.TypeMerged, contracts.ServiceMerger, 1, r1, 1, contracts.Merged{
		Request: v.Request, BaseSHA: base, MergeSHA: strings.Repeat("cd", 20),
	})
	h.waitLock(1, "merged and released", func(l validator.Lock) bool { return l.Merged && !l.Held() })
	h.out.failed(h.request(1, "feature/one", "main", one, "merge"), contracts.CodeAlreadyMerged)

	// Run 2's own checks_failed has released nothing it did not hold, and
	// PR #2 validates once its check is green.
	h.postStatus(two, "ci", "success")
	r2b := h.request(2, "feature/two", "main", two, "squash")
	v2 := h.out.validated(r2b)
	if l := h.lock(2); l.Holder != r2b {
		t.Fatalf("lock of PR #2 = %+v, want held by %s", l, r2b)
	}
	// The holder's failure at MERGING releases the lock.
	h.follow(contracts.TypeStepFailed, contracts.ServiceMerger, 2, r2b, 1, contracts.StepFailed{
		Request: v2.Request, Step: contracts.StateMerging, Code: contracts.CodeConflict, Reason: "conflict in a.txt",
		Conflicts: []string{"a.txt"},
	})
	h.waitLock(2, "released", func(l validator.Lock) bool { return !l.Held() })

	// A retry at MERGING passes the lock: while another run of PR #2 holds
	// it, the retry of run r2b is failed with lock_lost and merges nothing;
	// once the lock is free again, the next retry is validated under it.
	r2c := h.request(2, "feature/two", "main", two, "squash")
	h.out.validated(r2c)
	retry := func(attempt int) string {
		e, err := contracts.New(step.NewID(), contracts.TypeMergeValidated, contracts.SourceLedger, v2.PRID, time.Now(), *v2,
			contracts.Meta{CorrelationID: r2b, CausationID: r2b, Attempt: attempt, ReplayOf: h.out.answer(r2b).Event.ID()})
		if err != nil {
			t.Fatal(err)
		}
		h.publish(e)
		return e.ID()
	}
	lost := h.out.answer(retry(2))
	if f, ok := lost.Payload.(*contracts.StepFailed); !ok || f.Step != contracts.StateMerging || f.Code != contracts.CodeLockLost ||
		!strings.Contains(f.Reason, r2c) || lost.Meta.Attempt != 2 || lost.Meta.CorrelationID != r2b {
		t.Fatalf("answer to a retry while %s holds the lock: %s %+v (meta %+v); want step_failed(MERGING, lock_lost) of %s attempt 2 naming the holder",
			r2c, lost.Event.Type(), lost.Payload, lost.Meta, r2b)
	}
	if l := h.lock(2); l.Holder != r2c {
		t.Fatalf("lock after a refused retry = %+v, want still %s's", l, r2c)
	}
	h.follow(contracts.TypeStepFailed, contracts.ServiceMerger, 2, r2c, 1, contracts.StepFailed{
		Request: v2.Request, Step: contracts.StateMerging, Code: contracts.CodeConflict, Reason: "conflict in a.txt",
		Conflicts: []string{"a.txt"},
	})
	h.waitLock(2, "released by the other run", func(l validator.Lock) bool { return !l.Held() })
	again := retry(3)
	if env := h.out.answer(again); env.Event.Type() != contracts.TypeMergeValidated || env.Meta.Attempt != 3 || env.Meta.CorrelationID != r2b || env.Meta.ReplayOf != "" {
		t.Fatalf("answer to a retry under a free lock: %s meta %+v; want validated of %s attempt 3, not a replay", env.Event.Type(), env.Meta, r2b)
	}
	if l := h.lock(2); l != (validator.Lock{Holder: r2b, Attempt: 3}) {
		t.Fatalf("lock after the granted retry = %+v, want %s at attempt 3", l, r2b)
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	_, err := server.New(server.Options{DefaultRequired: []string{"ci", "ci"}})
	for _, want := range []string{"DB is required", "ReposDir is required", "twice"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("New(bad options) = %v; want an error mentioning %q", err, want)
		}
	}
}

// Concurrent runs of one PR: the lock's read-then-write in one SQLite
// transaction lets exactly one of them validate.
func TestConcurrentRunsOneWins(t *testing.T) {
	h, req := startGreenPR(t, 7, "feature/race", "race")
	var runs []string
	for range 6 {
		runs = append(runs, h.request(7, "feature/race", "main", req.HeadSHA, "merge"))
	}
	var winners []string
	for _, r := range runs {
		if env := h.out.answer(r); env.Event.Type() == contracts.TypeMergeValidated {
			winners = append(winners, r)
		}
	}
	if len(winners) != 1 {
		t.Fatalf("%d runs validated (%v), want exactly 1", len(winners), winners)
	}
	for _, r := range runs {
		if r == winners[0] {
			continue
		}
		if f := h.out.failed(r, contracts.CodeInProgress); !strings.Contains(f.Reason, winners[0]) {
			t.Errorf("in_progress reason %q does not name the winner %s", f.Reason, winners[0])
		}
	}
	if l := h.lock(7); l.Holder != winners[0] {
		t.Errorf("lock = %+v, want held by the winner %s", l, winners[0])
	}
}
