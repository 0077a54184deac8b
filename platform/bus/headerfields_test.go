package bus_test

import (
	"testing"

	"github.com/prsaga/prsaga/platform/bus"
)

// Two header names that differ only in case name one header: the event
// decodes with one of the two values, as a map of lower-cased names gave.
func TestDecodeHeaderNamesDifferingOnlyInCase(t *testing.T) {
	want, h, data := encodedWithNames(t, func(k string) string { return k })
	h["Ce-Subject"] = []string{"acme/widgets#99"}
	h["content-type"] = []string{"application/json"}
	h["Ce-Empty"] = nil // no value: as if absent
	for i := 0; i < 20; i++ {
		got, err := bus.Decode(h, data)
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if s := got.Subject(); s != want.Subject() && s != "acme/widgets#99" {
			t.Fatalf("subject %q: neither header's value", s)
		}
		if got.ID() != want.ID() || got.Type() != want.Type() {
			t.Fatalf("decoded %s %s, want %s %s", got.ID(), got.Type(), want.ID(), want.Type())
		}
		if _, ok := got.Extensions()["empty"]; ok {
			t.Fatal("a header without a value became an extension")
		}
	}
}
