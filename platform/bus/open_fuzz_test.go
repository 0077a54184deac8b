package bus_test

import (
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/binding/format"
	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
)

// headerLines writes a header as the "Name: value" lines parseFuzzHeader
// reads, in a stable order.
func headerLines(h map[string][]string) string {
	var lines []string
	for k, vs := range h {
		for _, v := range vs {
			lines = append(lines, k+": "+v)
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// sagaEvents is one valid saga event per type, each from its producer.
func sagaEvents(tb testing.TB) []*event.Event {
	tb.Helper()
	at := time.Date(2025, 3, 4, 5, 6, 7, 8, time.UTC)
	r := contracts.Request{PRID: "acme/widgets#42", Repo: "acme/widgets", PRNumber: 42, SourceBranch: "feature/x",
		TargetBranch: "main", HeadSHA: strings.Repeat("a", 40), Strategy: contracts.StrategyMerge, Title: "t", RequestedBy: "alice"}
	sha := strings.Repeat("b", 40)
	req, err := contracts.NewRequested("req-1", "https://forge.example", at, r, "ref-1")
	if err != nil {
		tb.Fatal(err)
	}
	var out []*event.Event
	out = append(out, req)
	for _, x := range []struct {
		typ, svc string
		p        any
	}{
		{contracts.TypeMergeValidated, contracts.ServiceValidator, contracts.Validated{Request: r}},
		{contracts.TypeMerged, contracts.ServiceMerger, contracts.Merged{Request: r, MergeSHA: sha, ChangedPaths: []string{"a"}}},
		{contracts.TypeNotified, contracts.ServiceNotifier, contracts.Notified{Request: r, MergeSHA: sha}},
		{contracts.TypeIndexed, contracts.ServiceIndexer, contracts.Indexed{Request: r, MergeSHA: sha}},
		{contracts.TypeStepFailed, contracts.ServiceMerger, contracts.StepFailed{Request: r, Step: contracts.StateMerging, Code: "conflict", Reason: "a"}},
		{contracts.TypeTimedOut, contracts.ServiceLedger, contracts.TimedOut{Request: r, Step: contracts.StateMerging, Deadline: at}},
		{contracts.TypeStateChanged, contracts.ServiceLedger, contracts.StateChanged{PRID: r.PRID, FromState: "VALIDATING", ToState: "MERGING"}},
	} {
		e, err := contracts.Follow(req, "evt-"+x.svc+"-"+strings.TrimSuffix(strings.TrimPrefix(x.typ, "prsaga."), ".v1"), x.typ, x.svc, at, x.p)
		if err != nil {
			tb.Fatalf("%s: %v", x.typ, err)
		}
		out = append(out, e)
	}
	return out
}

// FuzzDecodeOpen fuzzes what a consumer does with a message before its
// handler runs (runner.open): bus.Decode, contracts.Open and, for step
// events, ValidatePayload. No panic; a refusal is ErrUndecodable or a
// contract FieldError (what the runner dead-letters, with that reason);
// and whatever passes survives Encode → Decode → Open with the same id,
// type, subject, meta and payload — so the copy an outbox relays, the
// ledger replays or the DLQ keeps names the same event.
func FuzzDecodeOpen(f *testing.F) {
	for _, e := range sagaEvents(f) {
		subject, _ := contracts.SubjectOf(e)
		msg, err := bus.Encode(subject, e)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(headerLines(msg.Header), msg.Data)
		structured, err := format.JSON.Marshal(e)
		if err != nil {
			f.Fatal(err)
		}
		f.Add("Content-Type: application/cloudevents+json", structured)
	}
	f.Fuzz(func(t *testing.T, header string, body []byte) {
		e, ok := decodeFuzz(t, header, body)
		if !ok {
			return
		}
		env, err := contracts.Open(e)
		if err == nil && e.Type() != contracts.TypeMergeRequested {
			err = env.ValidatePayload()
		}
		if err != nil {
			if !errors.Is(err, contracts.ErrInvalid) {
				t.Fatalf("open error %q does not match contracts.ErrInvalid", err)
			}
			if strings.TrimSpace(err.Error()) == "" {
				t.Fatal("a refusal without a reason")
			}
			return
		}
		subject, err := contracts.SubjectOf(e)
		if err != nil {
			t.Fatalf("Open accepts an event of type %q that has no subject: %v", e.Type(), err)
		}
		msg, err := bus.Encode(subject, e)
		if err != nil {
			t.Fatalf("an accepted event does not encode: %v", err)
		}
		if got := msg.Header.Get(bus.HeaderMsgID); got != e.ID() {
			t.Fatalf("Nats-Msg-Id %q, want the event id %q", got, e.ID())
		}
		e2, err := bus.Decode(msg.Header, msg.Data)
		if err != nil {
			t.Fatalf("re-encoded event does not decode: %v", err)
		}
		env2, err := contracts.Open(e2)
		if err != nil {
			t.Fatalf("re-encoded event is refused: %v", err)
		}
		if e2.ID() != e.ID() || e2.Type() != e.Type() || e2.Subject() != e.Subject() || e2.Source() != e.Source() {
			t.Fatalf("round trip changed attributes: %s %s %s %s -> %s %s %s %s",
				e.ID(), e.Type(), e.Subject(), e.Source(), e2.ID(), e2.Type(), e2.Subject(), e2.Source())
		}
		if env2.Meta != env.Meta {
			t.Fatalf("round trip changed meta: %+v -> %+v", env.Meta, env2.Meta)
		}
		p1, _ := json.Marshal(env.Payload)
		p2, _ := json.Marshal(env2.Payload)
		if string(p1) != string(p2) {
			t.Fatalf("round trip changed the payload:\n%s\n%s", p1, p2)
		}
	})
}
