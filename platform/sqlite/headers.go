package sqlite

import (
	"encoding/json"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
)

// The outbox keeps a message's headers as a JSON object of string arrays
// ({"ce-id":["..."],...}), the form encoding/json gives nats.Header. These
// two functions write and read that form without reflection — the relay
// reads and the emitter writes it once per event — and fall back to
// encoding/json for anything they do not handle themselves.

// encodeHeaders writes h as JSON with sorted keys (what json.Marshal does).
func encodeHeaders(h nats.Header) (string, error) {
	keys := make([]string, 0, len(h))
	n := 2
	for k, vs := range h {
		keys = append(keys, k)
		n += len(k) + 6
		for _, v := range vs {
			n += len(v) + 3
		}
	}
	sort.Strings(keys)
	var b strings.Builder
	b.Grow(n)
	b.WriteByte('{')
	for i, k := range keys {
		if !writePlain(&b, i, k) {
			return marshalHeaders(h)
		}
		if h[k] == nil {
			b.WriteString(`:null`)
			continue
		}
		b.WriteString(`:[`)
		for j, v := range h[k] {
			if !writePlain(&b, j, v) {
				return marshalHeaders(h)
			}
		}
		b.WriteByte(']')
	}
	b.WriteByte('}')
	return b.String(), nil
}

// writePlain writes s, the i-th of its list, as a JSON string (after a
// comma unless first); false, with b then of no use, when s is not
// plainJSON.
func writePlain(b *strings.Builder, i int, s string) bool {
	if i > 0 {
		b.WriteByte(',')
	}
	if !plainJSON(s) {
		return false
	}
	b.WriteByte('"')
	b.WriteString(s)
	b.WriteByte('"')
	return true
}

func marshalHeaders(h nats.Header) (string, error) {
	b, err := json.Marshal(h)
	return string(b), err
}

// plainJSON reports whether s stands in a JSON string exactly as
// encoding/json writes it: valid UTF-8 with no character it escapes
// (quote, backslash, control characters, <, >, & and U+2028/U+2029).
func plainJSON(s string) bool {
	ascii := true
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		case c >= 0x80:
			ascii = false
		}
	}
	return ascii || utf8.ValidString(s) && !strings.ContainsAny(s, "\u2028\u2029")
}

// decodeHeaders reads what encodeHeaders (or json.Marshal) wrote.
func decodeHeaders(s string) (nats.Header, error) {
	if h, ok := scanHeaders(s); ok {
		return h, nil
	}
	var h nats.Header
	err := json.Unmarshal([]byte(s), &h)
	return h, err
}

// scanHeaders parses the plain form: no whitespace, no escapes. Anything
// else is left to encoding/json (ok false).
func scanHeaders(s string) (nats.Header, bool) {
	if len(s) < 2 || s[0] != '{' || s[len(s)-1] != '}' {
		return nil, false
	}
	h := make(nats.Header, 16)
	i := 1
	if s[i] == '}' {
		return h, i == len(s)-1
	}
	str := func() (string, bool) {
		if i >= len(s) || s[i] != '"' {
			return "", false
		}
		j := strings.IndexByte(s[i+1:], '"')
		if j < 0 {
			return "", false
		}
		v := s[i+1 : i+1+j]
		ascii := true
		for k := 0; k < len(v); k++ {
			switch c := v[k]; {
			case c < 0x20, c == '\\':
				return "", false
			case c >= 0x80:
				ascii = false
			}
		}
		if !ascii && !utf8.ValidString(v) {
			return "", false
		}
		i += j + 2
		return v, true
	}
	for {
		k, ok := str()
		if !ok || i+1 >= len(s) || s[i] != ':' || s[i+1] != '[' {
			return nil, false
		}
		i += 2
		var vs []string
		if i < len(s) && s[i] == ']' {
			vs = []string{}
		}
		for i < len(s) && s[i] != ']' {
			v, ok := str()
			if !ok || i >= len(s) {
				return nil, false
			}
			vs = append(vs, v)
			switch s[i] {
			case ',':
				i++
				if i >= len(s) || s[i] != '"' {
					return nil, false
				}
			case ']':
			default:
				return nil, false
			}
		}
		if i >= len(s) {
			return nil, false
		}
		i++ // ]
		h[k] = vs
		if i >= len(s) {
			return nil, false
		}
		switch s[i] {
		case ',':
			i++
		case '}':
			return h, i == len(s)-1
		default:
			return nil, false
		}
	}
}
