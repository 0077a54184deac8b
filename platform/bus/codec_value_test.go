package bus_test

import (
	"testing"

	"github.com/prsaga/prsaga/platform/bus"
)

// TestHeaderValueFromAnyPublisher decodes the values a publisher that does
// not percent-encode (the nats CLI, sdk-go's nats_jetstream) and one that
// follows the binding may send, and checks that each reads back the same
// after Encode (a relayed, dead-lettered or replayed copy).
func TestHeaderValueFromAnyPublisher(t *testing.T) {
	for _, tt := range []struct{ raw, want string }{
		{"50%", "50%"},         // a literal percent, unencoded
		{"%", "%"},             // alone
		{"100%zz", "100%zz"},   // not followed by hex digits
		{"a%2", "a%2"},         // one hex digit, then the end
		{"50% off", "50% off"}, // raw space too
		{"50%25", "50%"},       // the binding's encoding of 50%
		{"caf%c3%a9", "café"},  // lower-case hex is accepted
		{"caf%C3%A9", "café"},  // upper-case
		{"café", "café"},       // raw UTF-8
		{`"50%"`, "50%"},       // double-quoted (older binding texts)
		{`"a\"b\\c"`, `a"b\c`}, // quoted-pairs
		{`"open`, `"open`},     // not a quoted-string: literal
		{`"a"b"`, `"a"b"`},     // unescaped quote inside: literal
		{`"a\"`, `"a\"`},       // backslash before the closing quote: literal
		{`""`, ""},             // an empty quoted-string
		{"%%41", "%A"},         // only the escape is decoded
		{"%2541", "%41"},       // one round only
		{"a+b", "a+b"},         // '+' is not a space in a header
		{"x%0Ay", "x\ny"},      // an encoded newline is a value byte
	} {
		t.Run(tt.raw, func(t *testing.T) {
			msg, err := bus.Encode(testSubject, sampleEvent(t))
			if err != nil {
				t.Fatal(err)
			}
			msg.Header["ce-clientref"] = []string{tt.raw}
			got, err := bus.Decode(msg.Header, msg.Data)
			if err != nil {
				t.Fatalf("decode ce-clientref %q: %v", tt.raw, err)
			}
			if v := got.Extensions()["clientref"]; v != tt.want {
				t.Fatalf("ce-clientref %q: got %q, want %q", tt.raw, v, tt.want)
			}
			again, err := bus.Encode(testSubject, got)
			if err != nil {
				t.Fatalf("re-encode: %v", err)
			}
			back, err := bus.Decode(again.Header, again.Data)
			if err != nil {
				t.Fatalf("decode the re-encoded copy (ce-clientref %q): %v", again.Header.Get("ce-clientref"), err)
			}
			if v := back.Extensions()["clientref"]; v != tt.want {
				t.Errorf("after a re-encode (ce-clientref %q): got %q, want %q", again.Header.Get("ce-clientref"), v, tt.want)
			}
		})
	}
}
