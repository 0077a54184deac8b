package bus_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/binding/format"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"

	"github.com/prsaga/prsaga/platform/bus"
)

const testSubject = "prsaga.merge.requested"

// sampleEvent is a binary-mode-friendly event carrying every attribute and
// extension prsaga uses.
func sampleEvent(t testing.TB) *event.Event {
	t.Helper()
	e := event.New()
	e.SetID("0190a4b2-7c1e-7d3a-9f00-000000000001")
	e.SetSource("/prsaga/validator")
	e.SetType("prsaga.merge.validated.v1")
	e.SetSubject("acme/widgets#1")
	e.SetTime(time.Date(2025, 3, 4, 5, 6, 7, 890123456, time.UTC))
	e.SetExtension("correlationid", "corr-1")
	e.SetExtension("causationid", "cause-1")
	e.SetExtension("attempt", "2")
	e.SetExtension("replayof", "orig-1")
	e.SetExtension("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	if err := e.SetData(event.ApplicationJSON, json.RawMessage(`{"pr_id":"acme/widgets#1","n":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := e.Validate(); err != nil {
		t.Fatalf("sample event invalid: %v", err)
	}
	return &e
}

// sameEvent compares what the codec must keep.
func sameEvent(t *testing.T, got, want *event.Event) {
	t.Helper()
	if got.ID() != want.ID() || got.Source() != want.Source() || got.Type() != want.Type() || got.Subject() != want.Subject() {
		t.Errorf("attributes: got id=%q source=%q type=%q subject=%q, want id=%q source=%q type=%q subject=%q",
			got.ID(), got.Source(), got.Type(), got.Subject(), want.ID(), want.Source(), want.Type(), want.Subject())
	}
	if !got.Time().Equal(want.Time()) {
		t.Errorf("time: got %v, want %v", got.Time(), want.Time())
	}
	if got.SpecVersion() != event.CloudEventsVersionV1 {
		t.Errorf("specversion: got %q, want 1.0", got.SpecVersion())
	}
	gotExt, wantExt := got.Extensions(), want.Extensions()
	if len(gotExt) != len(wantExt) {
		t.Errorf("extensions: got %v, want %v", gotExt, wantExt)
	}
	for k, v := range wantExt {
		if gotExt[k] != v {
			t.Errorf("extension %s: got %v, want %v", k, gotExt[k], v)
		}
	}
	if !bytes.Equal(got.Data(), want.Data()) {
		t.Errorf("data: got %s, want %s", got.Data(), want.Data())
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	want := sampleEvent(t)
	msg, err := bus.Encode(testSubject, want)
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	if msg.Subject != testSubject {
		t.Errorf("subject: got %q, want %q", msg.Subject, testSubject)
	}
	for name := range msg.Header {
		if name == "Content-Type" || name == bus.HeaderMsgID {
			continue
		}
		if name != strings.ToLower(name) || !strings.HasPrefix(name, "ce-") {
			t.Errorf("header %q: want lower-case ce-* (or Content-Type, Nats-Msg-Id)", name)
		}
	}
	for _, name := range []string{"ce-specversion", "ce-id", "ce-source", "ce-type", "ce-subject", "ce-time",
		"ce-correlationid", "ce-causationid", "ce-attempt", "ce-replayof", "ce-traceparent"} {
		if _, ok := msg.Header[name]; !ok {
			t.Errorf("header %s is missing; headers: %v", name, msg.Header)
		}
	}
	if got := msg.Header.Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type: got %q, want application/json", got)
	}
	if got := msg.Header.Get(bus.HeaderMsgID); got != want.ID() {
		t.Errorf("Nats-Msg-Id: got %q, want the event id %q", got, want.ID())
	}
	if got := msg.Header.Get("ce-time"); got != "2025-03-04T05:06:07.890123456Z" {
		t.Errorf("ce-time: got %q, want RFC 3339 UTC", got)
	}
	if !bytes.Equal(msg.Data, want.Data()) {
		t.Errorf("body: got %s, want the event data %s", msg.Data, want.Data())
	}

	got, err := bus.Decode(msg.Header, msg.Data)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	sameEvent(t, got, want)
	if got.DataContentType() != event.ApplicationJSON {
		t.Errorf("datacontenttype: got %q, want application/json", got.DataContentType())
	}
}

// Encode's header values share one array: a caller that adds to or
// replaces one header of the message must leave the others as they were.
func TestEncodeHeadersAreIndependent(t *testing.T) {
	e := sampleEvent(t)
	e.SetExtension("x1", "extra")
	msg, err := bus.Encode(testSubject, e)
	if err != nil {
		t.Fatal(err)
	}
	before := map[string][]string{}
	for k, v := range msg.Header {
		before[k] = slices.Clone(v)
	}
	for k := range before {
		msg.Header.Add(k, "added")
	}
	for k, v := range before {
		if got := msg.Header.Values(k); len(got) != len(v)+1 || !slices.Equal(got[:len(v)], v) || got[len(v)] != "added" {
			t.Errorf("header %s after an Add to every header = %q, want %q then \"added\"", k, got, v)
		}
	}
	if got := msg.Header.Get("ce-x1"); got != "extra" {
		t.Errorf("ce-x1 = %q, want an extension outside the contract's under its own name", got)
	}
}

func TestEncodeRejectsInvalidEvent(t *testing.T) {
	e := event.New() // no id, source, type
	_, err := bus.Encode(testSubject, &e)
	if err == nil {
		t.Fatal("encode of an event without id/source/type: got nil error")
	}
}

func TestEncodeRejectsWhatDecodeWouldNotReadBack(t *testing.T) {
	tests := map[string]func(e *event.Event){
		"long extension name": func(e *event.Event) { e.SetExtension("averyveryverylongextensionname", "x") },
		"time beyond 9999":    func(e *event.Event) { e.SetTime(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)) },
		"cloudevents data":    func(e *event.Event) { e.SetDataContentType("application/cloudevents+json") },
	}
	for name, mutate := range tests {
		t.Run(name, func(t *testing.T) {
			e := sampleEvent(t)
			mutate(e)
			if msg, err := bus.Encode(testSubject, e); err == nil {
				t.Errorf("encode: got headers %v, want an error", msg.Header)
			}
		})
	}
}

func TestDecodeStructured(t *testing.T) {
	want := sampleEvent(t)
	body, err := format.JSON.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	for _, ct := range []string{"application/cloudevents+json", "Application/CloudEvents+JSON; charset=utf-8"} {
		t.Run(ct, func(t *testing.T) {
			h := nats.Header{"Content-Type": {ct}}
			got, err := bus.Decode(h, body)
			if err != nil {
				t.Fatalf("decode structured: %v", err)
			}
			sameEvent(t, got, want)
		})
	}
}

// encodedWithNames encodes the sample event and returns it, its headers
// with each name passed through name, and its body.
func encodedWithNames(t *testing.T, name func(string) string) (*event.Event, nats.Header, []byte) {
	t.Helper()
	want := sampleEvent(t)
	msg, err := bus.Encode(testSubject, want)
	if err != nil {
		t.Fatal(err)
	}
	h := nats.Header{}
	for k, v := range msg.Header {
		h[name(k)] = v
	}
	return want, h, msg.Data
}

func TestDecodeHeaderNamesAreCaseInsensitive(t *testing.T) {
	// Ce-Id, Ce-Specversion...: what a canonicalising client sends.
	want, h, data := encodedWithNames(t, canonical)
	if _, ok := h["Ce-Id"]; !ok {
		t.Fatalf("test setup: want a Ce-Id header, have %v", h)
	}
	got, err := bus.Decode(h, data)
	if err != nil {
		t.Fatalf("decode with canonical-case header names: %v", err)
	}
	sameEvent(t, got, want)

	_, upper, data := encodedWithNames(t, strings.ToUpper)
	got, err = bus.Decode(upper, data)
	if err != nil {
		t.Fatalf("decode with upper-case header names: %v", err)
	}
	sameEvent(t, got, want)
}

// canonical turns "ce-correlationid" into "Ce-Correlationid".
func canonical(k string) string {
	parts := strings.Split(strings.ToLower(k), "-")
	for i, p := range parts {
		if p != "" {
			parts[i] = strings.ToUpper(p[:1]) + p[1:]
		}
	}
	return strings.Join(parts, "-")
}

func TestPercentEncodingRoundTrips(t *testing.T) {
	e := sampleEvent(t)
	subject := `acme/widgets#1 "fix" 100% café – ünïcode`
	e.SetSubject(subject)
	e.SetExtension("clientref", "ticket 42/ä")
	msg, err := bus.Encode(testSubject, e)
	if err != nil {
		t.Fatal(err)
	}
	raw := msg.Header.Get("ce-subject")
	for i := 0; i < len(raw); i++ {
		if c := raw[i]; c <= ' ' || c >= 0x7f || c == '"' {
			t.Fatalf("ce-subject %q holds raw byte %q; want it percent-encoded", raw, c)
		}
	}
	if !strings.HasPrefix(raw, "acme/widgets#1%20%22fix%22%20100%25%20caf%C3%A9") {
		t.Errorf("ce-subject: got %q, want space, quote, %% and UTF-8 bytes as upper-case %%XX", raw)
	}
	got, err := bus.Decode(msg.Header, msg.Data)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if got.Subject() != subject {
		t.Errorf("subject: got %q, want %q", got.Subject(), subject)
	}
	if v := got.Extensions()["clientref"]; v != "ticket 42/ä" {
		t.Errorf("clientref: got %v, want %q", v, "ticket 42/ä")
	}

	// The binding lets a sender double-quote a value.
	msg.Header["ce-subject"] = []string{`"acme%2Fwidgets#1"`}
	got, err = bus.Decode(msg.Header, msg.Data)
	if err != nil {
		t.Fatalf("decode quoted value: %v", err)
	}
	if got.Subject() != "acme/widgets#1" {
		t.Errorf("quoted subject: got %q, want %q", got.Subject(), "acme/widgets#1")
	}
}

func TestDecodeErrors(t *testing.T) {
	good := func() nats.Header {
		msg, err := bus.Encode(testSubject, sampleEvent(t))
		if err != nil {
			t.Fatal(err)
		}
		return msg.Header
	}
	// with is a good header with key set to value; without, with key removed.
	with := func(key, value string) nats.Header {
		h := good()
		h[key] = []string{value}
		return h
	}
	without := func(key string) nats.Header {
		h := good()
		delete(h, key)
		return h
	}
	body := []byte(`{"a":1}`)
	tests := []struct {
		name    string
		header  nats.Header
		body    []byte
		mention string // the error message must name the problem
	}{{
		name:    "no specversion, not structured",
		header:  nats.Header{"Content-Type": {"application/json"}, "ce-id": {"x"}},
		body:    body,
		mention: "ce-specversion",
	}, {
		name:    "no headers at all",
		body:    []byte("garbage"),
		mention: "ce-specversion",
	}, {
		name:    "specversion 0.3",
		header:  with("ce-specversion", "0.3"),
		body:    body,
		mention: "0.3",
	}, {
		name:    "invalid JSON structured body",
		header:  nats.Header{"Content-Type": {"application/cloudevents+json"}},
		body:    []byte(`{"specversion":"1.0","id":`),
		mention: "structured",
	}, {
		name:    "structured batch",
		header:  nats.Header{"Content-Type": {"application/cloudevents-batch+json"}},
		body:    []byte(`[]`),
		mention: "not supported",
	}, {
		name:    "structured specversion 0.3",
		header:  nats.Header{"Content-Type": {"application/cloudevents+json"}},
		body:    []byte(`{"specversion":"0.3","id":"e-1","source":"/x","type":"t"}`),
		mention: "0.3",
	}, {
		name:    "structured extension name too long",
		header:  nats.Header{"Content-Type": {"application/cloudevents+json"}},
		body:    []byte(`{"specversion":"1.0","id":"e-1","source":"/x","type":"t","averyveryverylongextensionname":"x"}`),
		mention: "averyveryverylongextensionname",
	}, {
		name:    "structured data_base64",
		header:  nats.Header{"Content-Type": {"application/cloudevents+json"}},
		body:    []byte(`{"specversion":"1.0","id":"e-1","source":"/x","type":"t","data_base64":"e30="}`),
		mention: "data_base64",
	}, {
		name:    "structured event whose data is a CloudEvent",
		header:  nats.Header{"Content-Type": {"application/cloudevents+json"}},
		body:    []byte(`{"specversion":"1.0","id":"e-1","source":"/x","type":"t","datacontenttype":"application/cloudevents+json","data":{}}`),
		mention: "datacontenttype",
	}, {
		name:    "time beyond year 9999 in UTC",
		header:  with("ce-time", "9999-12-31T23:00:00-23:00"),
		body:    body,
		mention: "9999",
	}, {
		name:    "non-UTF-8 header value (percent-encoded)",
		header:  with("ce-subject", "acme%FF"),
		body:    body,
		mention: "UTF-8",
	}, {
		name:    "non-UTF-8 header value (raw)",
		header:  with("ce-subject", "acme\xff"),
		body:    body,
		mention: "UTF-8",
	}, {
		name:    "overlong UTF-8 after percent-decoding",
		header:  with("ce-subject", "a%C0%A0b"),
		body:    body,
		mention: "ce-subject",
	}, {
		name:    "body over MaxBody",
		header:  good(),
		body:    make([]byte, bus.MaxBody+1),
		mention: "exceeds",
	}, {
		name:    "bad ce-time",
		header:  with("ce-time", "yesterday"),
		body:    body,
		mention: "ce-time",
	}, {
		name:    "bad extension name",
		header:  with("ce-trace_parent", "x"),
		body:    body,
		mention: "trace_parent",
	}, {
		name:    "missing id",
		header:  without("ce-id"),
		body:    body,
		mention: "id",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := bus.Decode(tt.header, tt.body)
			if err == nil {
				t.Fatalf("decode: got event %v, want an error", e)
			}
			if !errors.Is(err, bus.ErrUndecodable) {
				t.Errorf("error %q does not match bus.ErrUndecodable", err)
			}
			if !strings.Contains(err.Error(), tt.mention) {
				t.Errorf("error %q does not mention %q", err, tt.mention)
			}
		})
	}
}

func TestDecodeBodyAtMaxBodyIsAccepted(t *testing.T) {
	msg, err := bus.Encode(testSubject, sampleEvent(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bus.Decode(msg.Header, make([]byte, bus.MaxBody)); err != nil {
		t.Errorf("decode of a body of exactly MaxBody bytes: %v", err)
	}
}

// parseFuzzHeader reads "Name: value" lines, as on the NATS wire.
func parseFuzzHeader(s string) nats.Header {
	h := nats.Header{}
	for _, line := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		h[k] = append(h[k], strings.TrimPrefix(v, " "))
	}
	return h
}

// decodeFuzz decodes a fuzzed message; ok is false when Decode refused
// it, which it must do with ErrUndecodable.
func decodeFuzz(t *testing.T, header string, body []byte) (e *event.Event, ok bool) {
	t.Helper()
	e, err := bus.Decode(parseFuzzHeader(header), body)
	if err != nil {
		if !errors.Is(err, bus.ErrUndecodable) {
			t.Fatalf("decode error %q does not match ErrUndecodable", err)
		}
		return nil, false
	}
	return e, true
}

// FuzzDecode feeds hostile headers and bodies to Decode: it must never
// panic, and whatever it accepts must survive Encode → Decode with its id
// and type intact (so a dead-lettered or relayed copy still names it).
func FuzzDecode(f *testing.F) {
	e := sampleEvent(f)
	msg, err := bus.Encode(testSubject, e)
	if err != nil {
		f.Fatal(err)
	}
	var lines []string
	for k, vs := range msg.Header {
		for _, v := range vs {
			lines = append(lines, k+": "+v)
		}
	}
	f.Add(strings.Join(lines, "\n"), msg.Data)
	structured, err := format.JSON.Marshal(e)
	if err != nil {
		f.Fatal(err)
	}
	f.Add("Content-Type: application/cloudevents+json", structured)
	f.Add("", []byte("garbage"))
	f.Fuzz(func(t *testing.T, header string, body []byte) {
		got, ok := decodeFuzz(t, header, body)
		if !ok {
			return
		}
		msg, err := bus.Encode(testSubject, got)
		if err != nil {
			t.Fatalf("decoded event %v does not re-encode: %v", got, err)
		}
		again, err := bus.Decode(msg.Header, msg.Data)
		if err != nil {
			t.Fatalf("re-encoded event does not decode: %v\nheaders: %v\nbody: %q", err, msg.Header, msg.Data)
		}
		if again.ID() != got.ID() || again.Type() != got.Type() {
			t.Fatalf("round trip: got id=%q type=%q, want id=%q type=%q", again.ID(), again.Type(), got.ID(), got.Type())
		}
		// Every value reads back unchanged: the header encoding is reversible.
		if again.Subject() != got.Subject() || again.Source() != got.Source() {
			t.Fatalf("round trip: got subject=%q source=%q, want subject=%q source=%q", again.Subject(), again.Source(), got.Subject(), got.Source())
		}
		for k, v := range got.Extensions() {
			// Binary mode carries every value as its string (Encode).
			if w := again.Extensions()[k]; fmt.Sprint(w) != fmt.Sprint(v) {
				t.Fatalf("round trip of extension %s: got %v, want %v", k, w, v)
			}
		}
	})
}
