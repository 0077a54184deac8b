package sqlite

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/nats-io/nats.go"
)

// The hand-written header codec must read and write exactly what
// encoding/json does: rows written by either are read by both.

func TestHeadersMatchEncodingJSON(t *testing.T) {
	for _, h := range []nats.Header{
		{},
		{"ce-id": {"e-1"}, "Nats-Msg-Id": {"e-1"}, "Content-Type": {"application/json"}},
		{"ce-subject": {"acme/widgets#42"}, "multi": {"a", "b", ""}, "empty": {}},
		{"quote": {`say "hi"`}, "back": {`a\b`}, "html": {"<a&b>"}, "ctl": {"a\nb"}},
		{"utf8": {"héllo wörld"}, "sep": {"a\u2028b"}, "bad": {"\xff"}},
		{"nil": nil},
	} {
		want, err := json.Marshal(h)
		if err != nil {
			t.Fatal(err)
		}
		got, err := encodeHeaders(h)
		if err != nil || got != string(want) {
			t.Errorf("encodeHeaders(%v):\n got %s, %v\nwant %s", h, got, err, want)
		}
		var wantH nats.Header
		if err := json.Unmarshal(want, &wantH); err != nil {
			t.Fatal(err)
		}
		gotH, err := decodeHeaders(string(want))
		if err != nil || !reflect.DeepEqual(gotH, wantH) {
			t.Errorf("decodeHeaders(%s):\n got %#v, %v\nwant %#v", want, gotH, err, wantH)
		}
	}
}

func FuzzDecodeHeaders(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":["b"]}`, `{"a":["b","c"],"d":[]}`, `{"a":null}`, `{ "a" : [ "b" ] }`,
		`{"a":["b""c"]}`, `{"a":["b",]}`, `{"a\"":["b"]}`, `{"a":["\u00e9"]}`, `{"a":["b"]`, `{"a":["b"]}x`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var want nats.Header
		wantErr := json.Unmarshal([]byte(s), &want)
		got, ok := scanHeaders(s)
		if !ok {
			return // left to encoding/json
		}
		if wantErr != nil {
			t.Fatalf("scanHeaders accepted %q, which encoding/json rejects: %v", s, wantErr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("scanHeaders(%q) = %#v, encoding/json reads %#v", s, got, want)
		}
	})
}
