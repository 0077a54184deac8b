package step

import (
	"testing"
	"time"

	"github.com/google/uuid"
)

func TestFollowIDIsAStableUUIDv7AfterItsInput(t *testing.T) {
	at := time.Date(2026, 12, 1, 21, 0, 0, 123_000_000, time.UTC)
	in := NewID()
	a := deriveID("merger", in, at)
	if b := deriveID("merger", in, at); a != b {
		t.Fatalf("the same input answered under %s and %s", a, b)
	}
	for _, other := range []string{deriveID("notifier", in, at), deriveID("merger", NewID(), at), deriveID("merger", in+"x", at)} {
		if other == a {
			t.Fatalf("another service or input gives the same id %s", a)
		}
	}
	u, err := uuid.Parse(a)
	if err != nil || u.Version() != 7 || u.Variant() != uuid.RFC4122 {
		t.Fatalf("%s: version %d variant %v (%v), want a version 7 RFC 9562 UUID", a, u.Version(), u.Variant(), err)
	}
	sec, nsec := u.Time().UnixTime()
	if got := time.Unix(sec, nsec); !got.Equal(at.Add(time.Millisecond)) {
		t.Fatalf("time of %s is %v, want the input's time plus 1ms %v", a, got, at.Add(time.Millisecond))
	}
	// Ids still sort by time: an answer made later sorts after.
	if later := deriveID("merger", in, at.Add(2*time.Millisecond)); later <= a {
		t.Fatalf("%s made 2ms later sorts before %s", later, a)
	}
	if zero := deriveID("merger", in, time.Time{}); zero[:13] != "00000000-0000" {
		t.Fatalf("an input without a time gives %s, want the zero time", zero)
	}
}
