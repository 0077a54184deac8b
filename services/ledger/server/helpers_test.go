package server_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/logging/logtest"
	"github.com/prsaga/prsaga/platform/natsembed/natstest"
	"github.com/prsaga/prsaga/platform/service"
	"github.com/prsaga/prsaga/platform/sqlite/sqlitetest"
	"github.com/prsaga/prsaga/platform/step"
	"github.com/prsaga/prsaga/services/ledger"
	"github.com/prsaga/prsaga/services/ledger/server"
)

// startBus starts an embedded NATS server with the stream, as every
// test here uses it.
func startBus(t *testing.T) *bus.Bus {
	_, b := natstest.Start(t, bus.Config{AckWait: 5 * time.Second})
	return b
}

// startSpec runs srv's consumer and outbox relay on b until the test ends,
// retrying a failed message after backoff.
func startSpec(t *testing.T, srv *server.Server, b *bus.Bus, log *slog.Logger, backoff time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	run, err := service.Start(ctx, srv.Spec(), b, log, service.Options{Backoff: []time.Duration{backoff}, RelayPoll: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(run.Stop)
}

// serve serves srv's routes until the test ends.
func serve(t *testing.T, srv *server.Server) *httptest.Server {
	mux := http.NewServeMux()
	srv.Routes(mux)
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	return hs
}

const headSHA = "1111111111111111111111111111111111111111"

type component struct {
	t    *testing.T
	bus  *bus.Bus
	http *httptest.Server
	logs *logtest.Buffer
}

func start(t *testing.T) *component {
	b := startBus(t)
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
// lag is how long after the stream stored the event the ledger projected
// it (received_at - stored_at).
func (c *component) lag(pr, eventID string) time.Duration {
	c.t.Helper()
	resp, err := c.http.Client().Get(c.http.URL + "/api/v1/sagas/" + url.PathEscape(pr) + "/events")
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct{ Events []ledger.Event }
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		c.t.Fatal(err)
	}
	for _, e := range body.Events {
		if e.EventID == eventID {
			if e.StoredAt.After(e.ReceivedAt) {
				c.t.Fatalf("event %s stored at %s, after the ledger received it at %s", eventID, e.StoredAt, e.ReceivedAt)
			}
			return e.ReceivedAt.Sub(e.StoredAt)
		}
	}
	c.t.Fatalf("event %s of %s is not recorded", eventID, pr)
	return 0
}

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
	r := readStream(c.t, c.bus, contracts.SubjectStateChanged, 20*time.Second)
	var out []contracts.Envelope
	for len(out) < n {
		en, err := r.next()
		if err != nil {
			c.t.Fatalf("after %d of %d state_changed events of %s: %v", len(out), n, pr, err)
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

const (
	stepTimeout = time.Second
	tick        = 200 * time.Millisecond
)

var fastWatchdog = ledger.WatchdogConfig{Interval: tick, Batch: 100, Timeouts: ledger.Timeouts{
	contracts.StateValidating: stepTimeout, contracts.StateMerging: stepTimeout,
	contracts.StateNotifying: stepTimeout, contracts.StateIndexing: stepTimeout,
}}

// startLedger runs one ledger instance (consumer, relay, watchdog, HTTP)
// over the database file at path, on b.
func startLedger(t *testing.T, b *bus.Bus, path string, logs *logtest.Buffer) *component {
	t.Helper()
	log := slog.New(slog.NewJSONHandler(logs, nil)).With("service", "ledger")
	srv, err := server.New(server.Options{DB: sqlitetest.OpenFile(t, path, server.Migrations), Bus: b, Watchdog: fastWatchdog, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	startSpec(t, srv, b, log, 50*time.Millisecond)
	stop, err := srv.StartWatchdog()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return &component{t: t, bus: b, http: serve(t, srv), logs: logs}
}
