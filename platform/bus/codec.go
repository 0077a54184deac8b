package bus

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cloudevents/sdk-go/v2/binding/format"
	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"

	"github.com/prsaga/prsaga/contracts"
)

// MaxBody bounds a message body; larger messages are dead-lettered.
const MaxBody = 1 << 20

// Header names of the NATS CloudEvents binding (binary mode) and of JetStream.
const (
	headerPrefix      = "ce-"
	headerContentType = "Content-Type"
	HeaderMsgID       = "Nats-Msg-Id"
	structuredType    = "application/cloudevents+json"
)

// ErrUndecodable wraps every reason a message is not a CloudEvent we can read.
var ErrUndecodable = errors.New("undecodable message")

func undecodable(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUndecodable, fmt.Sprintf(format, args...))
}

// Encode maps an event to a NATS message in binary content mode: data as the
// body, each attribute and extension as a lower-case `ce-` header, and the
// event id as Nats-Msg-Id so that JetStream drops a duplicate publish.
func Encode(subject string, e *event.Event) (*nats.Msg, error) {
	if err := e.Validate(); err != nil {
		return nil, fmt.Errorf("encode event: %w", err)
	}
	if err := portable(e); err != nil {
		return nil, fmt.Errorf("encode event: %w", err)
	}
	ext := contracts.Extensions(e)
	n := 10 + len(ext)
	h := make(nats.Header, n)
	// Every value gets its own one-element slice of one array (capped, so
	// that an Add to one header cannot write into the next), and the names
	// of the attributes and of the contract's extensions are constants:
	// a header then costs no allocation of its own (Encode runs once per
	// published message; it made ~30 small objects per message before).
	vals := make([]string, 0, n)
	set := func(name, v string) {
		vals = append(vals, v)
		i := len(vals)
		h[name] = vals[i-1 : i : i]
	}
	set(headerPrefix+"specversion", escape(e.SpecVersion()))
	set(headerPrefix+"id", escape(e.ID()))
	set(headerPrefix+"source", escape(e.Source()))
	set(headerPrefix+"type", escape(e.Type()))
	if s := e.Subject(); s != "" {
		set(headerPrefix+"subject", escape(s))
	}
	if !e.Time().IsZero() {
		set(headerPrefix+"time", e.Time().UTC().Format(time.RFC3339Nano))
	}
	if s := e.DataSchema(); s != "" {
		set(headerPrefix+"dataschema", escape(s))
	}
	ct := e.DataContentType()
	if ct == "" {
		ct = event.ApplicationJSON
	}
	set(headerPrefix+"datacontenttype", escape(ct))
	set(headerContentType, ct)
	for k, v := range ext {
		s, ok := v.(string)
		if !ok {
			s = fmt.Sprint(v)
		}
		set(extHeader(k), escape(s))
	}
	set(HeaderMsgID, e.ID())
	return &nats.Msg{Subject: subject, Header: h, Data: e.Data()}, nil
}

// extHeaders are the header names of the contract's extensions, which
// every event carries: made once, not once per message.
var extHeaders = func() map[string]string {
	m := map[string]string{}
	for _, name := range []string{contracts.ExtCorrelationID, contracts.ExtCausationID, contracts.ExtAttempt,
		contracts.ExtReplayOf, contracts.ExtClientRef, contracts.ExtTraceParent, contracts.ExtTraceState} {
		m[name] = headerPrefix + name
	}
	return m
}()

// extHeader is the header of extension name.
func extHeader(name string) string {
	if h, ok := extHeaders[name]; ok {
		return h
	}
	return headerPrefix + name
}

// Decode reads a CloudEvent from a NATS message in either content mode:
// structured when Content-Type is application/cloudevents(+json), binary when
// a ce-specversion header is present. Header names match case-insensitively.
func Decode(h nats.Header, body []byte) (*event.Event, error) {
	if len(body) > MaxBody {
		return nil, undecodable("body of %d bytes exceeds %d", len(body), MaxBody)
	}
	var buf [24]field
	hs := fields(h, buf[:0])
	ct := hs.get("content-type")
	if strings.HasPrefix(strings.ToLower(ct), "application/cloudevents") {
		return decodeStructured(ct, body)
	}
	if _, ok := hs.lookup("ce-specversion"); !ok {
		return nil, undecodable("not a CloudEvent: no ce-specversion header and Content-Type %q is not structured", ct)
	}
	return decodeBinary(hs, body)
}

func decodeStructured(ct string, body []byte) (*event.Event, error) {
	f := format.Lookup(ct)
	if f == nil || f.MediaType() != structuredType {
		return nil, undecodable("structured content type %q is not supported (use %s)", ct, structuredType)
	}
	if !utf8.Valid(body) {
		return nil, undecodable("structured body is not valid UTF-8")
	}
	var e event.Event
	if err := f.Unmarshal(body, &e); err != nil {
		return nil, undecodable("structured event: %s", err)
	}
	if e.DataBase64 {
		return nil, undecodable("structured event carries data_base64; JSON data expected")
	}
	if err := e.Validate(); err != nil {
		return nil, undecodable("structured event: %s", err)
	}
	if err := portable(&e); err != nil {
		return nil, undecodable("structured event: %s", err)
	}
	return &e, nil
}

func decodeBinary(h headerFields, body []byte) (*event.Event, error) {
	if v := h.get("ce-specversion"); v != event.CloudEventsVersionV1 {
		return nil, undecodable("specversion %q is not 1.0", v)
	}
	e := event.New()
	for _, f := range h {
		k, raw := f.name, f.value
		if !strings.HasPrefix(k, headerPrefix) {
			continue
		}
		name := strings.TrimPrefix(k, headerPrefix)
		v, err := unescape(raw)
		if err != nil {
			return nil, undecodable("header %s: %s", k, err)
		}
		switch name {
		case "specversion":
		case "id":
			e.SetID(v)
		case "source":
			e.SetSource(v)
		case "type":
			e.SetType(v)
		case "subject":
			e.SetSubject(v)
		case "dataschema":
			e.SetDataSchema(v)
		case "datacontenttype":
			e.SetDataContentType(v)
		case "time":
			t, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				return nil, undecodable("ce-time %q is not RFC 3339", v)
			}
			e.SetTime(t)
		default:
			if !validExtName(name) {
				return nil, undecodable("extension name %q is not lower-case letters and digits", name)
			}
			e.SetExtension(name, v)
		}
	}
	if e.DataContentType() == "" {
		if ct := h.get("content-type"); ct != "" {
			e.SetDataContentType(ct)
		}
	}
	if len(body) > 0 {
		e.DataEncoded = bytes.Clone(body)
	}
	if err := e.Validate(); err != nil {
		return nil, undecodable("binary event: %s", err)
	}
	if err := portable(&e); err != nil {
		return nil, undecodable("binary event: %s", err)
	}
	return &e, nil
}

// portable checks what both content modes must agree on, so that whatever
// Decode accepts Encode can carry and Decode reads back (a dead-lettered,
// relayed or replayed copy names the same event): specversion 1.0,
// extension names of the binding's alphabet and length, a time that RFC 3339
// can write in UTC, and a data content type that a binary-mode receiver will
// not mistake for a structured event.
func portable(e *event.Event) error {
	if v := e.SpecVersion(); v != event.CloudEventsVersionV1 {
		return fmt.Errorf("specversion %q is not 1.0", v)
	}
	for name := range contracts.Extensions(e) {
		if !validExtName(name) {
			return fmt.Errorf("extension name %q is not 1-20 lower-case letters and digits", name)
		}
	}
	if t := e.Time(); !t.IsZero() {
		if y := t.UTC().Year(); y < 0 || y > 9999 {
			return fmt.Errorf("time %s is outside years 0000-9999 in UTC", t.Format(time.RFC3339Nano))
		}
	}
	if ct := e.DataContentType(); strings.HasPrefix(strings.ToLower(ct), "application/cloudevents") {
		return fmt.Errorf("datacontenttype %q is a CloudEvents format, which binary mode cannot carry", ct)
	}
	return nil
}

func validExtName(n string) bool {
	if n == "" || len(n) > 20 {
		return false
	}
	for i := 0; i < len(n); i++ {
		if c := n[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// escape percent-encodes what the binding says must not appear raw in a
// header value: space, '"', '%' and anything outside U+0021–U+007E.
func escape(s string) string {
	i := 0
	for i < len(s) && !mustEscape(s[i]) {
		i++
	}
	if i == len(s) {
		return s // the usual case: nothing to escape
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if mustEscape(c) {
			const hex = "0123456789ABCDEF"
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xf])
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

func mustEscape(c byte) bool { return c <= ' ' || c >= 0x7f || c == '"' || c == '%' }

// unescape reads a header value as the binding's decoder must: a
// double-quoted value is unquoted first (backslash escapes included), then
// one round of percent-decoding, and the result must be UTF-8.
//
// A '%' that does not start a %XX escape is kept as it is rather than
// refused: escape never writes one, and a publisher that does not
// percent-encode (the nats CLI, sdk-go's nats_jetstream) sends "50%" meaning
// 50%. So every value escape writes reads back unchanged, and a raw value
// reads back unchanged unless it holds a %XX sequence or is wholly
// double-quoted, which the binding tells every receiver to decode. Only
// bytes that are not UTF-8 (raw, or after decoding, such as the overlong
// %C0%A0) are refused, as the binding requires.
func unescape(s string) (string, error) {
	if q, ok := unquote(s); ok {
		s = q
	}
	if strings.IndexByte(s, '%') >= 0 {
		s = percentDecode(s)
	}
	if !utf8.ValidString(s) {
		return "", fmt.Errorf("value is not valid UTF-8 (after percent-decoding)")
	}
	return s, nil
}

// unquote reads an RFC 7230 quoted-string; ok is false when s is not one
// (then it is taken literally).
func unquote(s string) (string, bool) {
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return "", false
	}
	in := s[1 : len(s)-1]
	if strings.IndexByte(in, '\\') < 0 && strings.IndexByte(in, '"') < 0 {
		return in, true
	}
	var b strings.Builder
	for i := 0; i < len(in); i++ {
		switch c := in[i]; c {
		case '"':
			return "", false // an unescaped quote ends the string early
		case '\\':
			if i+1 == len(in) {
				return "", false // the backslash would escape the closing quote
			}
			i++
			b.WriteByte(in[i])
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), true
}

// percentDecode replaces each %XX (either case) by its byte and keeps any
// other '%'.
func percentDecode(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func unhex(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}
