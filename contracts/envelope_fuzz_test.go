package contracts_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/cloudevents/sdk-go/v2/binding/format"
	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/prsaga/prsaga/contracts"
)

// seedEvents builds one valid event of every type (testing.TB: usable from
// a fuzz target's setup).
func seedEvents(tb testing.TB) []*event.Event {
	tb.Helper()
	r := validRequest()
	req, err := contracts.NewRequested(requestID, clientSource, at, r, "forge-req-7")
	if err != nil {
		tb.Fatal(err)
	}
	follow := func(cause *event.Event, id, typ, svc string, p any) *event.Event {
		e, err := contracts.Follow(cause, id, typ, svc, at, p)
		if err != nil {
			tb.Fatalf("Follow %s: %v", typ, err)
		}
		return e
	}
	validated := follow(req, "validated-1", contracts.TypeMergeValidated, contracts.ServiceValidator,
		contracts.Validated{Request: r, BaseSHA: baseSHA, Checks: []contracts.Check{{Context: "ci", State: "success"}}})
	merged := follow(validated, "merged-1", contracts.TypeMerged, contracts.ServiceMerger,
		contracts.Merged{Request: r, MergeSHA: mergeSHA, ChangedPaths: []string{"a.go"}})
	notified := follow(merged, "notified-1", contracts.TypeNotified, contracts.ServiceNotifier,
		contracts.Notified{Request: r, MergeSHA: mergeSHA, Deliveries: []contracts.Delivery{{WatcherID: "w1", Status: "delivered", Attempts: 1}}})
	indexed := follow(notified, "indexed-1", contracts.TypeIndexed, contracts.ServiceIndexer, contracts.Indexed{Request: r, MergeSHA: mergeSHA, Documents: 1})
	failed := follow(req, "failed-1", contracts.TypeStepFailed, contracts.ServiceValidator,
		contracts.StepFailed{Request: r, Step: contracts.StateValidating, Code: contracts.CodeInvalidRequest, Reason: "head_sha is missing"})
	timedOut := follow(validated, "timeout-1", contracts.TypeTimedOut, contracts.ServiceLedger,
		contracts.TimedOut{Request: r, Step: contracts.StateMerging, Deadline: at, LastEventID: "validated-1", Diagnosis: "pending"})
	changed := follow(indexed, "changed-1", contracts.TypeStateChanged, contracts.ServiceLedger,
		contracts.StateChanged{PRID: r.PRID, FromState: contracts.StateIndexing, ToState: contracts.StateMerged, Merged: true})
	replay, err := contracts.New("replay-1", contracts.TypeMerged, contracts.SourceLedger, r.PRID, at,
		contracts.Merged{Request: r, MergeSHA: mergeSHA}, contracts.Meta{CorrelationID: requestID, Attempt: 2, ReplayOf: "merged-1"})
	if err != nil {
		tb.Fatal(err)
	}
	return []*event.Event{req, validated, merged, notified, indexed, failed, timedOut, changed, replay}
}

func structuredJSON(tb testing.TB, e *event.Event) []byte {
	tb.Helper()
	b, err := format.JSON.Marshal(e)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// payloadJSON is a payload as its canonical JSON, for comparisons that do
// not depend on time zones' pointers.
func payloadJSON(t *testing.T, p any) string {
	t.Helper()
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatalf("marshal payload %T: %v", p, err)
	}
	return string(b)
}

// FuzzOpen feeds structured CloudEvents (whatever the sdk can parse) to
// Open and ValidatePayload — the checks every consumer makes before it
// touches its store. They must never panic; a refusal is a FieldError with
// a short message (it becomes the dead-letter reason); what Open accepts is
// attributable (subject = pr_id, valid ids, allowed producer) and survives
// being rebuilt with contracts.New (a relayed, replayed or dead-lettered
// copy names the same event with the same payload).
func FuzzOpen(f *testing.F) {
	for _, e := range seedEvents(f) {
		f.Add(structuredJSON(f, e))
	}
	f.Add([]byte(`{"specversion":"1.0","id":"x","source":"/s","type":"prsaga.merge.requested.v1","subject":"acme/widgets#42","data":{}}`))
	f.Add([]byte(`{"specversion":"1.0","id":"x","source":"/prsaga/validator","type":"prsaga.merge.merged.v1","subject":"acme/widgets#42","correlationid":"c","data":{"pr_id":"acme/widgets#42","repo":"acme/widgets","pr_number":42}}`))
	f.Add([]byte(`{"specversion":"1.0","id":"x","source":"https://evil","type":"prsaga.merge.requested.v1","subject":"acme/widgets#42","replayof":"orig","data":{"pr_id":"acme/widgets#42","repo":"acme/widgets","pr_number":42}}`))
	f.Add([]byte(`{"specversion":"1.0","id":"x","source":"/s","type":"prsaga.merge.requested.v1","subject":"../../x#1","data":{"pr_id":"../../x#1","repo":"../../x","pr_number":1}}`))
	f.Add([]byte(`{"specversion":"1.0","id":"x","source":"/s","type":"prsaga.merge.requested.v1","subject":"acme/widgets#42","datacontenttype":"text/plain","data":"hi"}`))
	f.Add([]byte(`{"specversion":"1.0","id":"x","source":"/s","type":"prsaga.merge.requested.v1","subject":"acme/widgets#42","data_base64":"e30="}`))
	f.Add([]byte(`{"specversion":"1.0","id":"x","source":"/s","type":"prsaga.merge.requested.v1","subject":"acme/widgets#42","attempt":"99999","data":{}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var e event.Event
		if err := format.JSON.Unmarshal(body, &e); err != nil {
			return // not a CloudEvent at all: the bus codec's business (FuzzDecode)
		}
		env, err := contracts.Open(&e)
		if err != nil {
			checkRefusal(t, "Open", err)
			return
		}
		req := env.Req()
		if e.Subject() != req.PRID {
			t.Fatalf("Open accepts subject %q for pr_id %q", e.Subject(), req.PRID)
		}
		if err := contracts.ValidateEventID(e.ID()); err != nil {
			t.Fatalf("Open accepts id %q: %v", e.ID(), err)
		}
		if subject, err := contracts.SubjectOf(&e); err != nil || subject != env.Route.Subject {
			t.Fatalf("Open accepts a %s from %q on route %q; its subject is %q (%v)", e.Type(), e.Source(), env.Route.Subject, subject, err)
		}
		if !confined(req.Repo) {
			t.Fatalf("Open accepts repo %q, which escapes the repos dir", req.Repo)
		}
		if env.Meta.CorrelationID == "" || env.Meta.Attempt < 1 {
			t.Fatalf("Open accepts meta %+v without a correlation id or attempt", env.Meta)
		}
		if err := env.ValidatePayload(); err != nil {
			checkRefusal(t, "ValidatePayload", err)
		}
		again, err := contracts.New(e.ID(), e.Type(), e.Source(), e.Subject(), e.Time(), env.Payload, env.Meta)
		if err != nil {
			t.Fatalf("an event Open accepts cannot be rebuilt: %v\nevent: %s", err, body)
		}
		env2, err := contracts.Open(again)
		if err != nil {
			t.Fatalf("a rebuilt event is refused: %v", err)
		}
		if env2.Meta != env.Meta {
			t.Fatalf("rebuilt meta %+v, want %+v", env2.Meta, env.Meta)
		}
		if a, b := payloadJSON(t, env.Payload), payloadJSON(t, env2.Payload); a != b {
			t.Fatalf("rebuilt payload %s, want %s", b, a)
		}
	})
}

// payloadKinds are the payload types in the order FuzzValidatePayload
// indexes them.
var payloadKinds = []func() any{
	func() any { return new(contracts.Request) },
	func() any { return new(contracts.Validated) },
	func() any { return new(contracts.Merged) },
	func() any { return new(contracts.Notified) },
	func() any { return new(contracts.Indexed) },
	func() any { return new(contracts.StepFailed) },
	func() any { return new(contracts.TimedOut) },
	func() any { return new(contracts.StateChanged) },
}

type validator interface{ Validate() error }

// FuzzValidatePayload decodes arbitrary JSON into every payload type and
// validates it: no panic, refusals are FieldErrors, and a payload that
// passes is stable under a JSON round trip and names only safe values
// (repo confined, refs clean, 40-hex shas, bounded lists and texts).
func FuzzValidatePayload(f *testing.F) {
	for i, e := range seedEvents(f) {
		f.Add(uint8(i%len(payloadKinds)), e.Data())
	}
	for i := range payloadKinds {
		for _, s := range []string{
			`{}`, `null`, `[]`, `{"pr_id":"acme/widgets#42","repo":"acme/widgets","pr_number":-42}`,
			`{"pr_id":"acme/widgets#42","repo":"acme/widgets","pr_number":42,"source_branch":"../x","target_branch":"a\u0000b","head_sha":"zz","strategy":"rebase"}`,
			`{"pr_id":"acme/widgets#42","repo":"acme/widgets","pr_number":42,"title":"\u001b[31mred","requested_by":"` + strings.Repeat("x", 300) + `"}`,
			`{"pr_id":"acme/widgets#42","repo":"acme/widgets","pr_number":1e3}`,
			`{"pr_id":"acme/widgets#42","PR_ID":"other/x#1","repo":"acme/widgets","pr_number":42}`,
			`{"pr_id":"acme/widgets#42","repo":"acme/widgets","pr_number":42,"changed_paths":[` + strings.Repeat(`"a",`, 1001) + `"a"]}`,
			`{"step":"MERGED","code":"","reason":"` + strings.Repeat("r", 5000) + `"}`,
			`{"deadline":"not a time"}`, `{"deadline":"10000-01-01T00:00:00Z"}`,
		} {
			f.Add(uint8(i), []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, kind uint8, data []byte) {
		newP := payloadKinds[int(kind)%len(payloadKinds)]
		p := newP()
		if err := json.Unmarshal(data, p); err != nil {
			return
		}
		err := p.(validator).Validate()
		if err != nil {
			checkRefusal(t, "Validate", err)
			return
		}
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("a valid %T does not encode: %v", p, err)
		}
		q := newP()
		if err := json.Unmarshal(b, q); err != nil {
			t.Fatalf("a valid %T does not decode from its own JSON: %v", p, err)
		}
		if err := q.(validator).Validate(); err != nil {
			t.Fatalf("a valid %T is invalid after a JSON round trip: %v\nJSON: %s", p, err, b)
		}
		if b2, _ := json.Marshal(q); !bytes.Equal(b, b2) {
			t.Fatalf("JSON round trip of %T changed it:\n%s\n%s", p, b, b2)
		}
		checkSafe(t, p)
	})
}

// checkSafe states, independently of the validators, what a valid payload
// may hand to the file system, git and the store.
func checkSafe(t *testing.T, p any) {
	t.Helper()
	var r contracts.Request
	full := true // the whole request is validated (not only its identity)
	switch v := p.(type) {
	case *contracts.Request:
		r = *v
	case *contracts.Validated:
		r = v.Request
	case *contracts.Merged:
		r = v.Request
		if len(v.ChangedPaths) > contracts.MaxListItems {
			t.Fatalf("valid merged with %d changed paths", len(v.ChangedPaths))
		}
	case *contracts.Notified:
		r = v.Request
	case *contracts.Indexed:
		r = v.Request
	case *contracts.StepFailed:
		r, full = v.Request, false
		if !v.Step.InFlight() || len(v.Reason) > contracts.MaxReason {
			t.Fatalf("valid step_failed with step %q and a %d-byte reason", v.Step, len(v.Reason))
		}
	case *contracts.TimedOut:
		r, full = v.Request, false
	case *contracts.StateChanged:
		if _, _, err := contracts.ParsePRID(v.PRID); err != nil {
			t.Fatalf("valid state_changed with pr_id %q", v.PRID)
		}
		return
	}
	if !confined(r.Repo) || r.PRNumber <= 0 || r.PRID != contracts.PRID(r.Repo, r.PRNumber) {
		t.Fatalf("valid payload with identity %q %q %d", r.PRID, r.Repo, r.PRNumber)
	}
	if !full {
		return
	}
	for _, b := range []string{r.SourceBranch, r.TargetBranch} {
		ref := "refs/heads/" + b
		if filepath.ToSlash(filepath.Clean(ref)) != ref || strings.ContainsAny(b, " \x00\x7f~^:?*[\\") {
			t.Fatalf("valid request with branch %q", b)
		}
	}
	for _, s := range []string{r.Title, r.RequestedBy} {
		if !utf8.ValidString(s) || strings.ContainsAny(s, "\x00\r\n\x1b") {
			t.Fatalf("valid request with text %q", s)
		}
	}
	if len(r.HeadSHA) != 40 || strings.Trim(r.HeadSHA, "0123456789abcdef") != "" {
		t.Fatalf("valid request with head_sha %q", r.HeadSHA)
	}
}

// FuzzMetaOf fuzzes the saga extensions of a requested and of a merged
// event: MetaOf must refuse what a consumer cannot trust (a bad id in
// correlationid/causationid/replayof, an attempt out of range, oversize
// trace fields) and keep what it accepts within those bounds.
func FuzzMetaOf(f *testing.F) {
	f.Add(true, "c-1", "", "1", "", "", "")
	f.Add(false, "c-1", "x", "2", "r-1", "ref", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	f.Add(false, "", "", "", "", "", "")
	f.Add(true, "other", "", "0", "", "", "")
	f.Add(false, "c 1", "../x", "-1", "a\nb", strings.Repeat("x", 300), "")
	f.Add(false, "c-1", "", "1001", "", "", "")
	f.Add(false, "c-1", "", "１", "", "", "")
	f.Fuzz(func(t *testing.T, requested bool, corr, cause, attempt, replay, clientRef, traceParent string) {
		e := event.New()
		e.SetID("evt-1")
		e.SetType(contracts.TypeMerged)
		if requested {
			e.SetType(contracts.TypeMergeRequested)
		}
		e.SetSource(contracts.SourceLedger)
		e.SetTime(time.Unix(0, 0))
		for name, v := range map[string]string{contracts.ExtCorrelationID: corr, contracts.ExtCausationID: cause,
			contracts.ExtAttempt: attempt, contracts.ExtReplayOf: replay, contracts.ExtClientRef: clientRef, contracts.ExtTraceParent: traceParent} {
			if v != "" {
				e.SetExtension(name, v)
			}
		}
		m, err := contracts.MetaOf(&e)
		if err != nil {
			checkRefusal(t, "MetaOf", err)
			return
		}
		if m.Attempt < 1 || m.Attempt > 1000 {
			t.Fatalf("MetaOf accepts attempt %d", m.Attempt)
		}
		for name, id := range map[string]string{"correlationid": m.CorrelationID, "causationid": m.CausationID, "replayof": m.ReplayOf} {
			if id == "" && name != "correlationid" {
				continue
			}
			if err := contracts.ValidateEventID(id); err != nil {
				t.Fatalf("MetaOf accepts %s %q: %v", name, id, err)
			}
		}
		if requested && m.ReplayOf == "" && m.CorrelationID != e.ID() {
			t.Fatalf("MetaOf accepts a requested event whose correlation id %q is not its id", m.CorrelationID)
		}
		if len(m.ClientRef) > 256 || len(m.TraceParent) > 256 {
			t.Fatalf("MetaOf accepts oversize extensions (%d, %d bytes)", len(m.ClientRef), len(m.TraceParent))
		}
	})
}
