package bus_test

import (
	"testing"

	"github.com/prsaga/prsaga/platform/bus"
)

// The codec runs twice per hop (encode at the producer, decode at every
// consumer): about 20 times per saga.

func BenchmarkEncode(b *testing.B) {
	e := sampleEvent(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := bus.Encode(testSubject, e); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	msg, err := bus.Encode(testSubject, sampleEvent(b))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := bus.Decode(msg.Header, msg.Data); err != nil {
			b.Fatal(err)
		}
	}
}
