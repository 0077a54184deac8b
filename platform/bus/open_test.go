package bus_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
)

// TestOpenAndCheckPayload: what a consumer takes (every saga event from
// its producer), what it refuses and with which error — Decode's,
// contracts.Open's, a payload field's — and the one exception: a merge
// request's payload is left to the validator, which answers it.
func TestOpenAndCheckPayload(t *testing.T) {
	msgs := map[string]*nats.Msg{}
	var r contracts.Request
	for _, e := range sagaEvents(t) {
		subject, _ := contracts.SubjectOf(e)
		m, err := bus.Encode(subject, e)
		if err != nil {
			t.Fatal(err)
		}
		env, err := bus.Open(m.Subject, m.Header, m.Data)
		if err == nil {
			err = bus.CheckPayload(env)
		}
		if err != nil || env.Event.ID() != e.ID() {
			t.Errorf("%s: Open, CheckPayload = %v (id %q); want it taken", e.Type(), err, env.Event.ID())
		}
		msgs[e.Type()], r = m, env.Req()
	}

	body := []byte("hello")
	_, derr := bus.Decode(nats.Header{}, body)
	if _, err := bus.Open(contracts.SubjectMergeRequested, nats.Header{}, body); !errors.Is(err, bus.ErrUndecodable) || err.Error() != derr.Error() {
		t.Errorf("Open(not a CloudEvent) = %v; want Decode's error %v", err, derr)
	}

	stray := msgs[contracts.TypeNotified]
	stray.Header.Set("ce-subject", "acme/widgets#43")
	_, err := bus.Open(stray.Subject, stray.Header, stray.Data)
	if !errors.Is(err, contracts.ErrInvalid) || errors.Is(err, bus.ErrUndecodable) || !strings.Contains(err.Error(), "subject") {
		t.Errorf("Open(subject is not the pr id) = %v; want contracts.Open's subject error", err)
	}

	// Payloads that keep the PR's identity but fail a field.
	withData := func(typ string, p any) contracts.Envelope {
		t.Helper()
		m := msgs[typ]
		e, err := bus.Decode(m.Header, m.Data)
		if err == nil {
			err = e.SetData(event.ApplicationJSON, p)
		}
		if err != nil {
			t.Fatal(err)
		}
		m, err = bus.Encode(m.Subject, e)
		if err != nil {
			t.Fatal(err)
		}
		env, err := bus.Open(m.Subject, m.Header, m.Data)
		if err != nil {
			t.Fatalf("Open(%s with a bad field) = %v; want it opened (the payload is checked apart)", typ, err)
		}
		if env.ValidatePayload() == nil {
			t.Fatalf("%s with a bad field validates: the case proves nothing", typ)
		}
		return env
	}
	if err := bus.CheckPayload(withData(contracts.TypeMerged, contracts.Merged{Request: r})); !errors.Is(err, contracts.ErrInvalid) || !strings.Contains(err.Error(), "merge_sha") {
		t.Errorf("CheckPayload(merged without sha) = %v; want the merge_sha field refused", err)
	}
	bad := r
	bad.HeadSHA = "HEAD"
	if err := bus.CheckPayload(withData(contracts.TypeMergeRequested, bad)); err != nil {
		t.Errorf("CheckPayload(request with a bad head sha) = %v; want nil (the validator answers it)", err)
	}
}
