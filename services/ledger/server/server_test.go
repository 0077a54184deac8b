package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/logging/logtest"
	"github.com/prsaga/prsaga/platform/natsembed/natstest"
	"github.com/prsaga/prsaga/platform/sqlite/sqlitetest"
	"github.com/prsaga/prsaga/platform/step"
	"github.com/prsaga/prsaga/services/ledger"
	"github.com/prsaga/prsaga/services/ledger/server"
)

const headSHA = "1111111111111111111111111111111111111111"

type component struct {
	t    *testing.T
	bus  *bus.Bus
	http *httptest.Server
	logs *logtest.Buffer
}

func start(t *testing.T) *component {
	_, b := natstest.Start(t, bus.Config{AckWait: 5 * time.Second})
	db := sqlitetest.Open(t, server.Migrations)
	srv, err := server.New(server.Options{DB: db})
	if err != nil {
		t.Fatal(err)
	}
	if spec := srv.Spec(); spec.Name != "ledger" || len(spec.Consumers) != 1 || spec.Consumers[0].Spec.GiveUp ||
		spec.Consumers[0].Spec.Durable != contracts.ConsumerLedger {
		t.Fatalf("spec = %+v: want service ledger, one never-giving-up ledger consumer", spec)
	}
	logs := &logtest.Buffer{}
	log := slog.New(slog.NewJSONHandler(logs, nil)).With("service", "ledger")
	startSpec(t, srv, b, log, 50*time.Millisecond)
	return &component{t: t, bus: b, http: serve(t, srv), logs: logs}
}

func (c *component) publish(evs ...*event.Event) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, e := range evs {
		if err := c.bus.Publish(ctx, e); err != nil {
			c.t.Fatalf("publish %s: %v", e.Type(), err)
		}
	}
}

// waitFor polls the saga over HTTP until it reaches state (or times out).
func (c *component) waitFor(pr string, state contracts.State) ledger.Saga {
	c.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var last string
	for {
		resp, err := c.http.Client().Get(c.http.URL + "/api/v1/sagas/" + url.PathEscape(pr))
		if err != nil {
			c.t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		last = string(b)
		if resp.StatusCode == http.StatusOK {
			var s ledger.Saga
			if err := json.Unmarshal(b, &s); err != nil {
				c.t.Fatal(err)
			}
			if s.State == state {
				return s
			}
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s did not reach %s; last answer: %s\nlogs:\n%s", pr, state, last, c.logs.String())
		}
		<-tick.C
	}
}

// announcements reads n state_changed events of a PR from the stream.
func (c *component) announcements(pr string, n int) []contracts.Envelope {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cons, err := c.bus.JS.OrderedConsumer(ctx, contracts.Stream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{contracts.SubjectStateChanged},
	})
	if err != nil {
		c.t.Fatal(err)
	}
	var out []contracts.Envelope
	for len(out) < n {
		m, err := cons.Next(jetstream.FetchContext(ctx))
		if err != nil {
			c.t.Fatalf("after %d of %d state_changed events of %s: %v", len(out), n, pr, err)
		}
		e, err := bus.Decode(m.Headers(), m.Data())
		if err != nil {
			c.t.Fatal(err)
		}
		en, err := contracts.Open(e)
		if err != nil {
			c.t.Fatalf("state_changed does not open: %v", err)
		}
		if en.Event.Subject() == pr {
			out = append(out, en)
		}
	}
	return out
}

func request(pr string) contracts.Request {
	repo, n, _ := contracts.ParsePRID(pr)
	return contracts.Request{PRID: pr, Repo: repo, PRNumber: n, SourceBranch: "feature", TargetBranch: "main",
		HeadSHA: headSHA, Strategy: contracts.StrategyMerge, Title: "Add widgets", RequestedBy: "alice"}
}

func follow(t *testing.T, cause *event.Event, typ, service string, payload any) *event.Event {
	t.Helper()
	e, err := contracts.Follow(cause, step.NewID(), typ, service, time.Now(), payload)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// A real run's events on embedded JetStream, published all at once (the
// ledger's workers see them in any order): the saga ends MERGED, each of
// its five transitions is announced once and logged once.
func TestComponentHappyRun(t *testing.T) {
	c := start(t)
	const pr = "acme/widgets#42"
	r := request(pr)
	const mergeSHA = "3333333333333333333333333333333333333333"
	req, err := contracts.NewRequested(step.NewID(), "https://forge.test", time.Now(), r, "ref-9")
	if err != nil {
		t.Fatal(err)
	}
	c.publish(
		req,
		follow(t, req, contracts.TypeMergeValidated, contracts.ServiceValidator, contracts.Validated{Request: r}),
		follow(t, req, contracts.TypeMerged, contracts.ServiceMerger, contracts.Merged{Request: r, MergeSHA: mergeSHA}),
		follow(t, req, contracts.TypeNotified, contracts.ServiceNotifier, contracts.Notified{Request: r, MergeSHA: mergeSHA}),
		follow(t, req, contracts.TypeIndexed, contracts.ServiceIndexer, contracts.Indexed{Request: r, MergeSHA: mergeSHA, Documents: 1}),
	)
	s := c.waitFor(pr, contracts.StateMerged)
	if !s.Merged || s.MergeSHA != mergeSHA || s.CorrelationID != req.ID() || len(s.Transitions) != 5 {
		t.Fatalf("saga = %+v, want merged with %s, run %s, 5 transitions", s, mergeSHA, req.ID())
	}

	ann := c.announcements(pr, 5)
	var tos []string
	for _, a := range ann {
		if a.Event.Source() != contracts.SourceLedger || a.Meta.CorrelationID != req.ID() {
			t.Errorf("state_changed from %s in run %s, want %s in %s", a.Event.Source(), a.Meta.CorrelationID, contracts.SourceLedger, req.ID())
		}
		tos = append(tos, string(a.Payload.(*contracts.StateChanged).ToState))
	}
	sort.Strings(tos)
	if got, want := strings.Join(tos, ","), "INDEXING,MERGED,MERGING,NOTIFYING,VALIDATING"; got != want {
		t.Fatalf("announced %s, want one of each: %s", got, want)
	}
	if n := strings.Count(c.logs.String(), `"msg":"saga_transition"`); n != 5 {
		t.Fatalf("%d saga_transition log lines, want 5:\n%s", n, c.logs.String())
	}

	var evs struct{ Events []ledger.Event }
	resp, err := c.http.Client().Get(c.http.URL + "/api/v1/sagas/" + url.PathEscape(pr) + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&evs); err != nil || len(evs.Events) != 5 {
		t.Fatalf("events: %v, %d, want 5 recorded", err, len(evs.Events))
	}
}

// A failure after validation ends MERGE_FAILED at MERGING, logged at WARN.
func TestComponentFailure(t *testing.T) {
	c := start(t)
	const pr = "acme/widgets#7"
	r := request(pr)
	req, err := contracts.NewRequested(step.NewID(), "https://forge.test", time.Now(), r, "")
	if err != nil {
		t.Fatal(err)
	}
	c.publish(req)
	c.waitFor(pr, contracts.StateValidating)
	c.publish(follow(t, req, contracts.TypeMergeValidated, contracts.ServiceValidator, contracts.Validated{Request: r}))
	c.waitFor(pr, contracts.StateMerging)
	c.publish(follow(t, req, contracts.TypeStepFailed, contracts.ServiceMerger, contracts.StepFailed{
		Request: r, Step: contracts.StateMerging, Code: contracts.CodeConflict, Reason: "a.go conflicts", Conflicts: []string{"a.go"}}))
	s := c.waitFor(pr, contracts.StateMergeFailed)
	if s.FailedStep != contracts.StateMerging || s.Merged || !strings.HasPrefix(s.LastError, "conflict") {
		t.Fatalf("saga = %+v, want failed at MERGING, not merged", s)
	}
	ann := c.announcements(pr, 3)
	last := ann[2].Payload.(*contracts.StateChanged)
	if last.ToState != contracts.StateMergeFailed || last.FailedStep != contracts.StateMerging || ann[2].Meta.CausationID == "" {
		t.Fatalf("last announcement %+v", last)
	}
	if !strings.Contains(c.logs.String(), `"level":"WARN","msg":"saga_transition"`) {
		t.Fatalf("no WARN saga_transition line:\n%s", c.logs.String())
	}
}

// POST /api/v1/merge-requests goes through the ledger's outbox and relay
// to JetStream, and comes back through the ledger's own consumer.
func TestComponentMergeRequestRoundTrip(t *testing.T) {
	c := start(t)
	const pr = "acme/widgets#100"
	body, _ := json.Marshal(request(pr))
	resp, err := c.http.Client().Post(c.http.URL+"/api/v1/merge-requests", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var acc struct {
		EventID       string `json:"event_id"`
		CorrelationID string `json:"correlation_id"`
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted || json.Unmarshal(b, &acc) != nil {
		t.Fatalf("POST: %d %s", resp.StatusCode, b)
	}
	s := c.waitFor(pr, contracts.StateValidating)
	if acc.EventID == "" || acc.CorrelationID != acc.EventID || s.CorrelationID != acc.EventID || len(s.Transitions) != 1 || s.Transitions[0].Actor != contracts.SourceLedger {
		t.Fatalf("saga = %+v, want the run of event %s", s, acc.EventID)
	}
}

func TestNewNeedsMigratedDB(t *testing.T) {
	if _, err := server.New(server.Options{}); err == nil {
		t.Fatal("New without a DB succeeded")
	}
	if _, err := server.New(server.Options{DB: sqlitetest.Open(t)}); err == nil || !strings.Contains(err.Error(), "migrations") {
		t.Fatalf("New over a DB without the ledger's tables: %v, want an error naming the migrations", err)
	}
}
