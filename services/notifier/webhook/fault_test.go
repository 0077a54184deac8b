package webhook

import (
	"testing"
	"time"

	"github.com/prsaga/prsaga/platform/backoff"
	"github.com/prsaga/prsaga/platform/fault"
)

// An error at the mid-delivery point is an answer lost after the receiver
// took the delivery: the Sender tries again, under the same delivery id.
func TestMidDeliveryFaultRepeatsTheSameDelivery(t *testing.T) {
	defer fault.Arm(fault.Rule{Point: fault.MidDelivery, Action: fault.Error})()
	rc := newReceiver(t, status(200))
	n, err := send(t, newSender(t, Config{AllowPrivate: true}), rc.url(), "d-mid")
	sameDelivery(t, rc, n, err, 2, "d-mid")
}

// The waits between attempts go through backoff.Jitter: never shorter than
// its spread allows (that the waits vary and never exceed the configured
// one is backoff's own test; here, that the Sender still waits).
func TestSendWaitsAreJittered(t *testing.T) {
	const d = 40 * time.Millisecond
	s := newSender(t, Config{AllowPrivate: true, Backoff: []time.Duration{d}})
	least := d - time.Duration(float64(d)*backoff.Spread)
	var gaps []time.Duration
	for i := 0; i < 6; i++ {
		rc := newReceiver(t, status(503, 200))
		if n, err := send(t, s, rc.url(), "d-jitter"); err != nil || n != 2 {
			t.Fatalf("Send = %d, %v; want 2, nil", n, err)
		}
		reqs := rc.requests()
		gap := reqs[1].at.Sub(reqs[0].at)
		if gap < least {
			t.Errorf("attempt %d waited %s, less than %s", i, gap, least)
		}
		gaps = append(gaps, gap)
	}
	t.Logf("waits %v", gaps)
}
