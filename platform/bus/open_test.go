package bus_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
)

// TestOpenAndCheckPayload: what a consumer takes (every saga event from
// its producer), what it refuses and with which error — Decode's,
// contracts.Open's, a payload field's — and the one exception: a merge
// request's payload is left to the validator, which answers it.
func TestOpenAndCheckPayload(t *testing.T) {
	for _, e := range sagaEvents(t) {
		subject, _ := contracts.SubjectFor(e.Type())
		m, err := bus.Encode(subject, e)
		if err != nil {
			t.Fatal(err)
		}
		env, err := bus.Open(m.Header, m.Data)
		if err == nil {
			err = bus.CheckPayload(env)
		}
		if err != nil || env.Event.ID() != e.ID() {
			t.Errorf("%s: Open, CheckPayload = %v (id %q); want it taken", e.Type(), err, env.Event.ID())
		}
	}

	body := []byte("hello")
	_, derr := bus.Decode(nats.Header{}, body)
	if _, err := bus.Open(nats.Header{}, body); !errors.Is(err, bus.ErrUndecodable) || err.Error() != derr.Error() {
		t.Errorf("Open(not a CloudEvent) = %v; want Decode's error %v", err, derr)
	}

	at := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	r := contracts.Request{PRID: "acme/widgets#42", Repo: "acme/widgets", PRNumber: 42, SourceBranch: "feature/x",
		TargetBranch: "main", HeadSHA: strings.Repeat("a", 40), Strategy: contracts.StrategyMerge, Title: "t", RequestedBy: "alice"}
	encode := func(id, typ, svc string, p any, subject string) *nats.Msg {
		t.Helper()
		m := contracts.Meta{CorrelationID: "c-1", Attempt: 1}
		source := contracts.Source(svc)
		if typ == contracts.TypeMergeRequested {
			source, m.CorrelationID = "https://forge.example", id
		}
		e, err := contracts.New(id, typ, source, subject, at, p, m)
		if err != nil {
			t.Fatal(err)
		}
		s, _ := contracts.SubjectFor(typ)
		msg, err := bus.Encode(s, e)
		if err != nil {
			t.Fatal(err)
		}
		return msg
	}

	stray := encode("n-1", contracts.TypeNotified, contracts.ServiceNotifier, contracts.Notified{Request: r, MergeSHA: strings.Repeat("b", 40)}, "acme/widgets#43")
	_, err := bus.Open(stray.Header, stray.Data)
	if !errors.Is(err, contracts.ErrInvalid) || errors.Is(err, bus.ErrUndecodable) || !strings.Contains(err.Error(), "subject") {
		t.Errorf("Open(subject is not the pr id) = %v; want contracts.Open's subject error", err)
	}

	merged := encode("m-1", contracts.TypeMerged, contracts.ServiceMerger, contracts.Merged{Request: r}, r.PRID)
	env, err := bus.Open(merged.Header, merged.Data)
	if err != nil {
		t.Fatalf("Open(merged without sha) = %v; want it opened (the payload is checked apart)", err)
	}
	if err := bus.CheckPayload(env); !errors.Is(err, contracts.ErrInvalid) || !strings.Contains(err.Error(), "merge_sha") {
		t.Errorf("CheckPayload(merged without sha) = %v; want the merge_sha field refused", err)
	}

	bad := r
	bad.HeadSHA = "HEAD"
	request := encode("req-1", contracts.TypeMergeRequested, "", bad, bad.PRID)
	env, err = bus.Open(request.Header, request.Data)
	if err != nil {
		t.Fatalf("Open(request with a bad head sha) = %v; want it opened", err)
	}
	if err := bus.CheckPayload(env); err != nil {
		t.Errorf("CheckPayload(request with a bad head sha) = %v; want nil (the validator answers it)", err)
	}
	if env.ValidatePayload() == nil {
		t.Error("the bad request validates: the case above proves nothing")
	}
}
