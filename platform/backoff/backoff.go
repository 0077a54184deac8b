// Package backoff spreads retry delays. Every retry of prsaga — a runner's
// Nak delay, the outbox relay's wait after a failed round, a webhook's wait
// between attempts — is jittered, so that the many messages or rows that
// failed together (a NATS restart, a receiver down) do not all come back
// in the same instant.
package backoff

import (
	"math/rand/v2"
	"time"
)

// Spread is the fraction of a delay that Jitter may take off.
const Spread = 0.2

// Jitter returns d shortened by a random amount of up to Spread·d: a delay
// in [0.8·d, d]. It never lengthens d, so that a configured delay stays an
// upper bound and every budget computed from the configured delays (the
// webhook retry budget, the delivery budget under the step timeouts)
// still holds. Zero and negative delays are returned as they are.
func Jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return d
	}
	cut := time.Duration(float64(d) * Spread)
	if cut <= 0 {
		return d
	}
	return d - rand.N(cut+1)
}
