package server_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/sqlite/sqlitetest"
	"github.com/prsaga/prsaga/platform/step"
	"github.com/prsaga/prsaga/services/ledger"
	"github.com/prsaga/prsaga/services/ledger/server"
)

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
