package bus

import (
	"strings"

	"github.com/nats-io/nats.go"
)

// field is one header as Decode reads it: its name lower-cased (names
// match case-insensitively) and its first value.
type field struct{ name, value string }

type headerFields []field

// fields lists h's headers that have a value, names lower-cased, into buf.
// A map of them per message was a good part of Decode's allocations; a
// message has a dozen headers, so a list is as quick to search.
func fields(h nats.Header, buf []field) headerFields {
	out := headerFields(buf)
	folded := 0 // names that were not lower-case already
	for k, vs := range h {
		if len(vs) == 0 {
			continue
		}
		lk := lowerName(k)
		if lk != k {
			folded++
		}
		out = append(out, field{lk, vs[0]})
	}
	if folded > 0 && out.collide() {
		// Two names that differ only in case: which value counts was, and
		// stays, the map's choice.
		m := make(map[string]string, len(out))
		for _, f := range out {
			m[f.name] = f.value
		}
		out = out[:0]
		for k, v := range m {
			out = append(out, field{k, v})
		}
	}
	return out
}

// lowerName is strings.ToLower, without its allocation for the two
// mixed-case names every message of ours carries.
func lowerName(k string) string {
	switch k {
	case headerContentType:
		return "content-type"
	case HeaderMsgID:
		return "nats-msg-id"
	}
	return strings.ToLower(k)
}

// collide reports whether a name occurs twice.
func (hs headerFields) collide() bool {
	for i := range hs {
		for j := i + 1; j < len(hs); j++ {
			if hs[i].name == hs[j].name {
				return true
			}
		}
	}
	return false
}

func (hs headerFields) lookup(name string) (string, bool) {
	for _, f := range hs {
		if f.name == name {
			return f.value, true
		}
	}
	return "", false
}

func (hs headerFields) get(name string) string {
	v, _ := hs.lookup(name)
	return v
}
