package backoff

import (
	"testing"
	"time"
)

func TestJitterStaysWithinBoundsAndVaries(t *testing.T) {
	for _, d := range []time.Duration{5 * time.Millisecond, 100 * time.Millisecond, time.Second, 30 * time.Second} {
		lo := d - time.Duration(float64(d)*Spread)
		seen := map[time.Duration]bool{}
		minSeen, maxSeen := d, time.Duration(0)
		for i := 0; i < 2000; i++ {
			j := Jitter(d)
			if j < lo || j > d {
				t.Fatalf("Jitter(%s) = %s, outside [%s, %s]", d, j, lo, d)
			}
			seen[j] = true
			minSeen, maxSeen = min(minSeen, j), max(maxSeen, j)
		}
		if len(seen) < 100 {
			t.Errorf("Jitter(%s): only %d distinct delays in 2000", d, len(seen))
		}
		// The spread is used, not just a sliver of it.
		if span := maxSeen - minSeen; span < (d-lo)*8/10 {
			t.Errorf("Jitter(%s): delays span %s of the allowed %s", d, span, d-lo)
		}
	}
	for _, d := range []time.Duration{0, -time.Second, 1, 4} {
		if j := Jitter(d); j > d || j < 0 && d >= 0 {
			t.Errorf("Jitter(%d) = %d", d, j)
		}
	}
}
