package contracts_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/prsaga/prsaga/contracts"
)

const (
	clientSource = "https://forge.example/acme"
	requestID    = "01J9Z3Y6K8QX4T2N5M7P0R1S2V"
	traceParent  = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	traceState   = "vendor=abc"
)

var at = time.Date(2025, 3, 4, 5, 6, 7, 8, time.FixedZone("CET", 3600))

// ext returns an extension's value, failing the test unless it is a string.
func ext(t *testing.T, e *event.Event, name string) (string, bool) {
	t.Helper()
	v, ok := e.Extensions()[name]
	if !ok {
		return "", false
	}
	s, isString := v.(string)
	if !isString {
		t.Errorf("extension %s = %#v (%T), want a string", name, v, v)
	}
	return s, true
}

func wantExt(t *testing.T, e *event.Event, name, want string) {
	t.Helper()
	got, ok := ext(t, e, name)
	switch {
	case want == "" && ok:
		t.Errorf("%s event has extension %s = %q, want none", e.Type(), name, got)
	case want != "" && got != want:
		t.Errorf("%s event extension %s = %q, want %q", e.Type(), name, got, want)
	}
}

func mustRequested(t *testing.T) *event.Event {
	t.Helper()
	e, err := contracts.NewRequested(requestID, clientSource, at, validRequest(), "forge-req-7")
	if err != nil {
		t.Fatalf("NewRequested: %v", err)
	}
	return e
}

func TestNewRequested(t *testing.T) {
	e := mustRequested(t)
	checks := []struct{ what, got, want string }{
		{"id", e.ID(), requestID},
		{"type", e.Type(), contracts.TypeMergeRequested},
		{"source", e.Source(), clientSource},
		{"subject", e.Subject(), "acme/widgets#42"},
		{"specversion", e.SpecVersion(), "1.0"},
		{"datacontenttype", e.DataContentType(), "application/json"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("requested %s = %q, want %q", c.what, c.got, c.want)
		}
	}
	if !e.Time().Equal(at) || e.Time().Location() != time.UTC {
		t.Errorf("requested time = %v, want %v in UTC", e.Time(), at.UTC())
	}
	var got contracts.Request
	if err := json.Unmarshal(e.Data(), &got); err != nil || got != validRequest() {
		t.Errorf("requested data = %s (%v), want the request", e.Data(), err)
	}
	wantExt(t, e, contracts.ExtCorrelationID, requestID)
	wantExt(t, e, contracts.ExtAttempt, "1")
	wantExt(t, e, contracts.ExtClientRef, "forge-req-7")
	wantExt(t, e, contracts.ExtCausationID, "")
	wantExt(t, e, contracts.ExtReplayOf, "")
	wantExt(t, e, contracts.ExtTraceParent, "")
}

func TestNewSetsEveryExtension(t *testing.T) {
	m := contracts.Meta{
		CorrelationID: requestID, CausationID: "cause-1", Attempt: 3, ReplayOf: "orig-1",
		ClientRef: "ref", TraceParent: traceParent, TraceState: traceState,
	}
	e, err := contracts.New("evt-2", contracts.TypeMergeValidated, contracts.SourceLedger, "acme/widgets#42", at,
		contracts.Validated{Request: validRequest(), BaseSHA: baseSHA}, m)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	for name, want := range map[string]string{
		contracts.ExtCorrelationID: requestID, contracts.ExtCausationID: "cause-1", contracts.ExtAttempt: "3",
		contracts.ExtReplayOf: "orig-1", contracts.ExtClientRef: "ref", contracts.ExtTraceParent: traceParent,
		contracts.ExtTraceState: traceState,
	} {
		wantExt(t, e, name, want)
	}
	got, err := contracts.MetaOf(e)
	if err != nil || got != m {
		t.Errorf("MetaOf(New(meta)) = %+v, %v; want %+v", got, err, m)
	}
}

func TestNewRejects(t *testing.T) {
	tests := []struct {
		name    string
		id      string
		typ     string
		source  string
		payload any
		m       contracts.Meta
		field   string // "" when the error is not a field error (CloudEvents or JSON)
	}{
		{"bad id", "a b", contracts.TypeMerged, contracts.Source(contracts.ServiceMerger), validRequest(), contracts.Meta{CorrelationID: "c"}, "id"},
		{"empty id", "", contracts.TypeMerged, contracts.Source(contracts.ServiceMerger), validRequest(), contracts.Meta{CorrelationID: "c"}, "id"},
		{"no correlation", "e1", contracts.TypeMerged, contracts.Source(contracts.ServiceMerger), validRequest(), contracts.Meta{}, "correlationid"},
		{"attempt too high", "e1", contracts.TypeMerged, contracts.Source(contracts.ServiceMerger), validRequest(), contracts.Meta{CorrelationID: "c", Attempt: 1001}, "attempt"},
		{"requested of another run", "e1", contracts.TypeMergeRequested, clientSource, validRequest(), contracts.Meta{CorrelationID: "c"}, "correlationid"},
		{"empty source", "e1", contracts.TypeMerged, "", validRequest(), contracts.Meta{CorrelationID: "c"}, ""},
		{"payload not JSON", "e1", contracts.TypeMerged, contracts.Source(contracts.ServiceMerger), make(chan int), contracts.Meta{CorrelationID: "c"}, ""},
	}
	for _, tt := range tests {
		e, err := contracts.New(tt.id, tt.typ, tt.source, "acme/widgets#42", at, tt.payload, tt.m)
		if err == nil {
			t.Errorf("%s: New = %v, want an error", tt.name, e)
			continue
		}
		if tt.field != "" {
			var fe *contracts.FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field {
				t.Errorf("%s: New error %q, want one naming %s", tt.name, err, tt.field)
			}
		}
	}
}

func TestFollow(t *testing.T) {
	cause, err := contracts.New("replay-9", contracts.TypeMergeValidated, contracts.SourceLedger, "acme/widgets#42", at,
		contracts.Validated{Request: validRequest(), BaseSHA: baseSHA},
		contracts.Meta{CorrelationID: requestID, CausationID: "x", Attempt: 2, ReplayOf: "orig-validated",
			ClientRef: "forge-req-7", TraceParent: traceParent, TraceState: traceState})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	later := at.Add(time.Minute)
	merged, err := contracts.Follow(cause, "merged-1", contracts.TypeMerged, contracts.ServiceMerger, later,
		contracts.Merged{Request: validRequest(), MergeSHA: mergeSHA})
	if err != nil {
		t.Fatalf("Follow: %v", err)
	}
	if merged.ID() != "merged-1" || merged.Type() != contracts.TypeMerged || merged.Source() != "/prsaga/merger" ||
		merged.Subject() != "acme/widgets#42" || !merged.Time().Equal(later) {
		t.Errorf("Follow attributes = id %q type %q source %q subject %q time %v; want merged-1, %s, /prsaga/merger, acme/widgets#42, %v",
			merged.ID(), merged.Type(), merged.Source(), merged.Subject(), merged.Time(), contracts.TypeMerged, later)
	}
	wantExt(t, merged, contracts.ExtCorrelationID, requestID)
	wantExt(t, merged, contracts.ExtCausationID, "replay-9")
	wantExt(t, merged, contracts.ExtAttempt, "2")
	wantExt(t, merged, contracts.ExtTraceParent, traceParent)
	wantExt(t, merged, contracts.ExtTraceState, traceState)
	wantExt(t, merged, contracts.ExtClientRef, "forge-req-7")
	// The reaction to a replay is not itself a replay.
	wantExt(t, merged, contracts.ExtReplayOf, "")
	var p contracts.Merged
	if err := contracts.Decode(merged, &p); err != nil || p.MergeSHA != mergeSHA {
		t.Errorf("Follow data decodes to %+v, %v; want merge_sha %s", p, err, mergeSHA)
	}

	// Two hops: correlation is still the request's id, causation the last hop.
	notified, err := contracts.Follow(merged, "notified-1", contracts.TypeNotified, contracts.ServiceNotifier, later,
		contracts.Notified{Request: validRequest(), MergeSHA: mergeSHA})
	if err != nil {
		t.Fatalf("Follow: %v", err)
	}
	wantExt(t, notified, contracts.ExtCorrelationID, requestID)
	wantExt(t, notified, contracts.ExtCausationID, "merged-1")
	wantExt(t, notified, contracts.ExtAttempt, "2")

	// A requested event's reaction is correlated by the request's id.
	v, err := contracts.Follow(mustRequested(t), "v-1", contracts.TypeMergeValidated, contracts.ServiceValidator, later,
		contracts.Validated{Request: validRequest()})
	if err != nil {
		t.Fatalf("Follow: %v", err)
	}
	wantExt(t, v, contracts.ExtCorrelationID, requestID)
	wantExt(t, v, contracts.ExtCausationID, requestID)
	wantExt(t, v, contracts.ExtAttempt, "1")

	// A cause with broken extensions cannot be followed.
	bad := mustRequested(t)
	bad.SetExtension(contracts.ExtAttempt, "zero")
	if _, err := contracts.Follow(bad, "v-2", contracts.TypeMergeValidated, contracts.ServiceValidator, later, validRequest()); err == nil {
		t.Errorf("Follow of a cause with attempt %q = nil error, want one", "zero")
	}
}

func TestMetaOf(t *testing.T) {
	tests := []struct {
		name  string
		typ   string
		exts  map[string]any
		want  contracts.Meta
		field string // non-empty: MetaOf must fail naming it
	}{
		{"requested without extensions", contracts.TypeMergeRequested, nil,
			contracts.Meta{CorrelationID: "e1", Attempt: 1}, ""},
		{"requested with its own id", contracts.TypeMergeRequested, map[string]any{"correlationid": "e1", "attempt": "1"},
			contracts.Meta{CorrelationID: "e1", Attempt: 1}, ""},
		{"requested of another run", contracts.TypeMergeRequested, map[string]any{"correlationid": "other"}, contracts.Meta{}, "correlationid"},
		{"replayed requested keeps the run's id", contracts.TypeMergeRequested,
			map[string]any{"correlationid": "orig", "replayof": "orig", "attempt": "2"},
			contracts.Meta{CorrelationID: "orig", ReplayOf: "orig", Attempt: 2}, ""},
		{"validated without correlation", contracts.TypeMergeValidated, nil, contracts.Meta{}, "correlationid"},
		{"step_failed without correlation", contracts.TypeStepFailed, map[string]any{"attempt": "1"}, contracts.Meta{}, "correlationid"},
		{"all extensions", contracts.TypeMerged, map[string]any{"correlationid": "c", "causationid": "k", "attempt": "1000",
			"clientref": "r", "traceparent": traceParent, "tracestate": traceState},
			contracts.Meta{CorrelationID: "c", CausationID: "k", Attempt: 1000, ClientRef: "r", TraceParent: traceParent, TraceState: traceState}, ""},
		{"numeric attempt (structured JSON)", contracts.TypeMerged, map[string]any{"correlationid": "c", "attempt": 3},
			contracts.Meta{CorrelationID: "c", Attempt: 3}, ""},
		{"attempt 0", contracts.TypeMerged, map[string]any{"correlationid": "c", "attempt": "0"}, contracts.Meta{}, "attempt"},
		{"attempt -1", contracts.TypeMerged, map[string]any{"correlationid": "c", "attempt": "-1"}, contracts.Meta{}, "attempt"},
		{"attempt 1001", contracts.TypeMerged, map[string]any{"correlationid": "c", "attempt": "1001"}, contracts.Meta{}, "attempt"},
		{"attempt words", contracts.TypeMerged, map[string]any{"correlationid": "c", "attempt": "one"}, contracts.Meta{}, "attempt"},
		{"attempt 1.5", contracts.TypeMerged, map[string]any{"correlationid": "c", "attempt": "1.5"}, contracts.Meta{}, "attempt"},
		{"bad correlation id", contracts.TypeMerged, map[string]any{"correlationid": "a b"}, contracts.Meta{}, "correlationid"},
		{"bad causation id", contracts.TypeMerged, map[string]any{"correlationid": "c", "causationid": "a/b"}, contracts.Meta{}, "causationid"},
		{"bad replayof", contracts.TypeMerged, map[string]any{"correlationid": "c", "replayof": "a*"}, contracts.Meta{}, "replayof"},
		{"long clientref", contracts.TypeMerged, map[string]any{"correlationid": "c", "clientref": strings.Repeat("r", 257)}, contracts.Meta{}, "extensions"},
		{"long traceparent", contracts.TypeMerged, map[string]any{"correlationid": "c", "traceparent": strings.Repeat("0", 257)}, contracts.Meta{}, "extensions"},
	}
	for _, tt := range tests {
		e := event.New()
		e.SetID("e1")
		e.SetType(tt.typ)
		e.SetSource(clientSource)
		for k, v := range tt.exts {
			e.SetExtension(k, v)
		}
		got, err := contracts.MetaOf(&e)
		if tt.field != "" {
			checkInvalid(t, "MetaOf("+tt.name+")", err, tt.field)
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s: MetaOf = %+v, %v; want %+v, nil", tt.name, got, err, tt.want)
		}
	}
}

// validEvents builds one valid event of every type, each from its producer.
func validEvents(t *testing.T) map[string]*event.Event {
	t.Helper()
	req := mustRequested(t)
	r := validRequest()
	follow := func(cause *event.Event, id, typ, svc string, p any) *event.Event {
		e, err := contracts.Follow(cause, id, typ, svc, at, p)
		if err != nil {
			t.Fatalf("Follow %s: %v", typ, err)
		}
		return e
	}
	validated := follow(req, "validated-1", contracts.TypeMergeValidated, contracts.ServiceValidator, contracts.Validated{Request: r, BaseSHA: baseSHA})
	merged := follow(validated, "merged-1", contracts.TypeMerged, contracts.ServiceMerger, contracts.Merged{Request: r, MergeSHA: mergeSHA})
	notified := follow(merged, "notified-1", contracts.TypeNotified, contracts.ServiceNotifier, contracts.Notified{Request: r, MergeSHA: mergeSHA})
	indexed := follow(notified, "indexed-1", contracts.TypeIndexed, contracts.ServiceIndexer, contracts.Indexed{Request: r, MergeSHA: mergeSHA, Documents: 1})
	failed := follow(merged, "failed-1", contracts.TypeStepFailed, contracts.ServiceNotifier,
		contracts.StepFailed{Request: r, Step: contracts.StateNotifying, Code: contracts.CodeWebhookFailed, Reason: "down", Retryable: true})
	timedOut := follow(validated, "timeout-1", contracts.TypeTimedOut, contracts.ServiceLedger,
		contracts.TimedOut{Request: r, Step: contracts.StateMerging, Deadline: at, LastEventID: "validated-1", Diagnosis: "pending"})
	changed := follow(indexed, "changed-1", contracts.TypeStateChanged, contracts.ServiceLedger,
		contracts.StateChanged{PRID: r.PRID, FromState: contracts.StateIndexing, ToState: contracts.StateMerged, Merged: true, MergeSHA: mergeSHA, Reason: contracts.TypeIndexed})
	return map[string]*event.Event{
		contracts.TypeMergeRequested: req, contracts.TypeMergeValidated: validated, contracts.TypeMerged: merged,
		contracts.TypeNotified: notified, contracts.TypeIndexed: indexed, contracts.TypeStepFailed: failed,
		contracts.TypeTimedOut: timedOut, contracts.TypeStateChanged: changed,
	}
}

func TestOpenAcceptsEveryType(t *testing.T) {
	wantPayload := map[string]any{
		contracts.TypeMergeRequested: &contracts.Request{}, contracts.TypeMergeValidated: &contracts.Validated{},
		contracts.TypeMerged: &contracts.Merged{}, contracts.TypeNotified: &contracts.Notified{},
		contracts.TypeIndexed: &contracts.Indexed{}, contracts.TypeStepFailed: &contracts.StepFailed{},
		contracts.TypeTimedOut: &contracts.TimedOut{}, contracts.TypeStateChanged: &contracts.StateChanged{},
	}
	events := validEvents(t)
	if len(events) != len(wantPayload) {
		t.Fatalf("built %d event types, want %d", len(events), len(wantPayload))
	}
	for typ, e := range events {
		// Each event as built, and after a structured-mode JSON round trip
		// (where extensions travel as JSON values).
		body, err := json.Marshal(e)
		if err != nil {
			t.Fatalf("marshal %s: %v", typ, err)
		}
		var back event.Event
		if err := json.Unmarshal(body, &back); err != nil {
			t.Fatalf("unmarshal %s: %v", typ, err)
		}
		for _, ev := range []*event.Event{e, &back} {
			env, err := contracts.Open(ev)
			if err != nil {
				t.Errorf("Open(%s) = %v, want nil", typ, err)
				continue
			}
			if reflect.TypeOf(env.Payload) != reflect.TypeOf(wantPayload[typ]) {
				t.Errorf("Open(%s) payload is %T, want %T", typ, env.Payload, wantPayload[typ])
			}
			wantReq := validRequest()
			if typ == contracts.TypeStateChanged {
				wantReq = contracts.Request{PRID: wantReq.PRID, Repo: wantReq.Repo, PRNumber: wantReq.PRNumber}
			}
			if got := env.Req(); got != wantReq {
				t.Errorf("Open(%s).Req() = %+v, want %+v", typ, got, wantReq)
			}
			if env.Meta.CorrelationID != requestID || env.Meta.Attempt != 1 {
				t.Errorf("Open(%s).Meta = %+v, want correlation %s, attempt 1", typ, env.Meta, requestID)
			}
			if err := env.ValidatePayload(); err != nil {
				t.Errorf("Open(%s).ValidatePayload() = %v, want nil", typ, err)
			}
		}
	}
}

func TestOpenAcceptsReplaysAndLedgerRequests(t *testing.T) {
	r := validRequest()
	tests := []struct {
		name    string
		typ     string
		payload any
		m       contracts.Meta
	}{
		{"replayed requested", contracts.TypeMergeRequested, r,
			contracts.Meta{CorrelationID: requestID, ReplayOf: requestID, Attempt: 2}},
		{"replayed validated", contracts.TypeMergeValidated, contracts.Validated{Request: r},
			contracts.Meta{CorrelationID: requestID, ReplayOf: "validated-1", Attempt: 2}},
		{"replayed merged", contracts.TypeMerged, contracts.Merged{Request: r, MergeSHA: mergeSHA},
			contracts.Meta{CorrelationID: requestID, ReplayOf: "merged-1", Attempt: 3}},
		{"replayed notified", contracts.TypeNotified, contracts.Notified{Request: r, MergeSHA: mergeSHA},
			contracts.Meta{CorrelationID: requestID, ReplayOf: "notified-1", Attempt: 2}},
		// POST /api/v1/merge-requests: the ledger publishes a client's request.
		{"ledger-published request", contracts.TypeMergeRequested, r, contracts.Meta{CorrelationID: "req-2"}},
	}
	for _, tt := range tests {
		id := "replay-1"
		if tt.m.ReplayOf == "" {
			id = tt.m.CorrelationID
		}
		e, err := contracts.New(id, tt.typ, contracts.SourceLedger, r.PRID, at, tt.payload, tt.m)
		if err != nil {
			t.Fatalf("%s: New: %v", tt.name, err)
		}
		env, err := contracts.Open(e)
		if err != nil {
			t.Errorf("%s: Open = %v, want nil", tt.name, err)
			continue
		}
		if env.Meta != tt.m && !(tt.m.Attempt == 0 && env.Meta.Attempt == 1) {
			t.Errorf("%s: Meta = %+v, want %+v", tt.name, env.Meta, tt.m)
		}
	}

	// charset=utf-8 is still JSON.
	e := mustRequested(t)
	e.SetDataContentType("application/json; charset=utf-8")
	if _, err := contracts.Open(e); err != nil {
		t.Errorf("Open(requested with charset) = %v, want nil", err)
	}
}

func TestOpenRejects(t *testing.T) {
	r := validRequest()
	tests := []struct {
		name  string
		typ   string // event to start from (from validEvents)
		edit  func(e *event.Event)
		field string
	}{
		{"bad id", contracts.TypeMerged, func(e *event.Event) { e.SetID("a b") }, "id"},
		{"long id", contracts.TypeMerged, func(e *event.Event) { e.SetID(strings.Repeat("i", 129)) }, "id"},
		{"specversion 0.3", contracts.TypeMerged, func(e *event.Event) { e.SetSpecVersion("0.3") }, "specversion"},
		{"unknown type", contracts.TypeMerged, func(e *event.Event) { e.SetType("prsaga.merge.merged.v2") }, "type"},
		{"validated from merger", contracts.TypeMergeValidated, func(e *event.Event) { e.SetSource("/prsaga/merger") }, "source"},
		{"merged from validator", contracts.TypeMerged, func(e *event.Event) { e.SetSource("/prsaga/validator") }, "source"},
		{"notified from indexer", contracts.TypeNotified, func(e *event.Event) { e.SetSource("/prsaga/indexer") }, "source"},
		{"indexed from a client", contracts.TypeIndexed, func(e *event.Event) { e.SetSource(clientSource) }, "source"},
		{"indexed from ledger", contracts.TypeIndexed, func(e *event.Event) { e.SetSource(contracts.SourceLedger) }, "source"},
		{"timed_out from merger", contracts.TypeTimedOut, func(e *event.Event) { e.SetSource("/prsaga/merger") }, "source"},
		{"state_changed from validator", contracts.TypeStateChanged, func(e *event.Event) { e.SetSource("/prsaga/validator") }, "source"},
		{"step_failed from ledger", contracts.TypeStepFailed, func(e *event.Event) { e.SetSource(contracts.SourceLedger) }, "source"},
		{"step_failed from a client", contracts.TypeStepFailed, func(e *event.Event) { e.SetSource(clientSource) }, "source"},
		{"requested from merger", contracts.TypeMergeRequested, func(e *event.Event) { e.SetSource("/prsaga/merger") }, "source"},
		{"client-set replayof", contracts.TypeMergeRequested, func(e *event.Event) { e.SetExtension(contracts.ExtReplayOf, requestID) }, "source"}, // a replay is published only by the ledger
		{"step service sets replayof", contracts.TypeMerged, func(e *event.Event) { e.SetExtension(contracts.ExtReplayOf, "merged-0") }, "source"},
		{"replay of a non-trigger", contracts.TypeIndexed, func(e *event.Event) {
			e.SetSource(contracts.SourceLedger)
			e.SetExtension(contracts.ExtReplayOf, "indexed-0")
		}, "replayof"},
		{"bad attempt", contracts.TypeMerged, func(e *event.Event) { e.SetExtension(contracts.ExtAttempt, "0") }, "attempt"},
		{"missing correlation", contracts.TypeMerged, func(e *event.Event) {
			delete(e.Context.(*event.EventContextV1).Extensions, contracts.ExtCorrelationID)
		}, "correlationid"},
		{"requested of another run", contracts.TypeMergeRequested, func(e *event.Event) { e.SetExtension(contracts.ExtCorrelationID, "other") }, "correlationid"},
		{"text data", contracts.TypeMerged, func(e *event.Event) { e.SetDataContentType("text/plain") }, "datacontenttype"},
		{"non-JSON data", contracts.TypeMerged, func(e *event.Event) { e.DataEncoded = []byte("{not json") }, "data"},
		{"no data", contracts.TypeMerged, func(e *event.Event) { e.DataEncoded = nil }, "data"},
		{"data of the wrong shape", contracts.TypeMerged, func(e *event.Event) { e.DataEncoded = []byte(`{"pr_number":"42"}`) }, "data"},
		{"subject of another PR", contracts.TypeMerged, func(e *event.Event) { e.SetSubject("acme/widgets#43") }, "subject"},
		{"no subject", contracts.TypeMerged, func(e *event.Event) { e.SetSubject("") }, "subject"},
		{"invalid pr_id", contracts.TypeMerged, func(e *event.Event) {
			bad := contracts.Merged{Request: r, MergeSHA: mergeSHA}
			bad.PRID, bad.Repo = "../../etc#42", "../../etc"
			setData(t, e, bad)
			e.SetSubject(bad.PRID)
		}, "pr_id"},
		{"repo does not match pr_id", contracts.TypeMergeRequested, func(e *event.Event) {
			bad := r
			bad.Repo = "acme/gadgets"
			setData(t, e, bad)
		}, "repo"},
		{"pr_number does not match pr_id", contracts.TypeStepFailed, func(e *event.Event) {
			bad := contracts.StepFailed{Request: r, Step: contracts.StateNotifying, Code: "x"}
			bad.PRNumber = 41
			setData(t, e, bad)
		}, "pr_number"},
		{"state_changed with bad pr_id", contracts.TypeStateChanged, func(e *event.Event) {
			setData(t, e, contracts.StateChanged{PRID: "acme#1", ToState: contracts.StateMerged})
			e.SetSubject("acme#1")
		}, "pr_id"},
	}
	for _, tt := range tests {
		e := validEvents(t)[tt.typ]
		tt.edit(e)
		_, err := contracts.Open(e)
		checkInvalid(t, "Open("+tt.name+")", err, tt.field)
	}
}

func setData(t *testing.T, e *event.Event, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	e.DataEncoded = b
}

func TestValidatePayloadFlagsRequestFields(t *testing.T) {
	r := validRequest()
	r.HeadSHA, r.TargetBranch, r.Strategy = "HEAD", "a..b", "octopus"
	e, err := contracts.NewRequested(requestID, clientSource, at, r, "")
	if err != nil {
		t.Fatalf("NewRequested: %v", err)
	}
	env, err := contracts.Open(e)
	if err != nil {
		t.Fatalf("Open of a request with a valid identity = %v, want nil (it must be answered, not dead-lettered)", err)
	}
	got := fieldsOf(t, env.ValidatePayload())
	want := []string{"target_branch", "head_sha", "strategy"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ValidatePayload names %q, want %q", got, want)
	}

	// The invalid_request answer carries the same bad fields and is valid.
	failed, err := contracts.Follow(e, "f-1", contracts.TypeStepFailed, contracts.ServiceValidator, at,
		contracts.StepFailed{Request: r, Step: contracts.StateValidating, Code: contracts.CodeInvalidRequest, Reason: "bad"})
	if err != nil {
		t.Fatalf("Follow: %v", err)
	}
	fenv, err := contracts.Open(failed)
	if err != nil {
		t.Fatalf("Open(invalid_request step_failed) = %v", err)
	}
	if err := fenv.ValidatePayload(); err != nil {
		t.Errorf("ValidatePayload(invalid_request step_failed) = %v, want nil", err)
	}

	// A merged event without its merge sha.
	m, err := contracts.Follow(e, "m-1", contracts.TypeMerged, contracts.ServiceMerger, at, contracts.Merged{Request: validRequest()})
	if err != nil {
		t.Fatalf("Follow: %v", err)
	}
	menv, err := contracts.Open(m)
	if err != nil {
		t.Fatalf("Open(merged) = %v", err)
	}
	if got := fieldsOf(t, menv.ValidatePayload()); !reflect.DeepEqual(got, []string{"merge_sha"}) {
		t.Errorf("ValidatePayload(merged without sha) names %q, want [merge_sha]", got)
	}
	if err := (contracts.Envelope{}).ValidatePayload(); err == nil {
		t.Errorf("ValidatePayload of an empty envelope = nil, want an error")
	}
}

func TestIncomingOf(t *testing.T) {
	events := validEvents(t)
	tests := []struct {
		typ  string
		want contracts.Incoming
	}{
		{contracts.TypeMergeRequested, contracts.Incoming{ID: requestID}},
		{contracts.TypeMerged, contracts.Incoming{ID: "merged-1", MergeSHA: mergeSHA}},
		{contracts.TypeNotified, contracts.Incoming{ID: "notified-1", MergeSHA: mergeSHA}},
		{contracts.TypeIndexed, contracts.Incoming{ID: "indexed-1", MergeSHA: mergeSHA}},
		{contracts.TypeStepFailed, contracts.Incoming{ID: "failed-1", Step: contracts.StateNotifying, Error: "webhook_failed: down", Code: "webhook_failed"}},
		{contracts.TypeTimedOut, contracts.Incoming{ID: "timeout-1", Step: contracts.StateMerging, Error: "timed_out: pending"}},
	}
	for _, tt := range tests {
		env, err := contracts.Open(events[tt.typ])
		if err != nil {
			t.Fatalf("Open(%s): %v", tt.typ, err)
		}
		want := tt.want
		want.Type, want.CorrelationID, want.Attempt, want.Req = tt.typ, requestID, 1, validRequest()
		// Time stays zero: the consumer supplies when the bus stored it.
		if got := contracts.IncomingOf(env); got != want {
			t.Errorf("IncomingOf(%s) = %+v, want %+v", tt.typ, got, want)
		}
	}
}
