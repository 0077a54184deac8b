package bus

import (
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/prsaga/prsaga/contracts"
)

// Open reads a message as every consumer does before its handler sees it:
// Decode, then contracts.Open. Its error is theirs, unwrapped, because it
// is the reason a dead-lettered message carries: Decode's matches
// ErrUndecodable (not a CloudEvent we can read), contracts.Open's never
// does (an event that cannot be attributed to a saga). The runner and
// `prsaga reindex` both take messages through it, so that a rebuilt index
// holds what the indexer's consumer would have handed it.
func Open(h nats.Header, body []byte) (contracts.Envelope, error) {
	e, err := Decode(h, body)
	if err != nil {
		return contracts.Envelope{}, err
	}
	return contracts.Open(e)
}

// CheckPayload checks an opened event's payload fields as a consumer does
// before its handler sees it: every field, except a merge request's — an
// invalid request is answered by the validator (invalid_request); any other
// invalid event has nobody to answer and is dead-lettered.
func CheckPayload(env contracts.Envelope) error {
	if env.Event.Type() == contracts.TypeMergeRequested {
		return nil
	}
	return env.ValidatePayload()
}

// CheckSubject checks that an opened event arrived on the subject of its
// type (design §3): a consumer subscribed to a step's subject must not hand
// its handler another step's event, which it would refuse on every
// delivery until the step gave up.
func CheckSubject(env contracts.Envelope, subject string) error {
	if want, ok := contracts.SubjectFor(env.Event.Type()); ok && want != subject {
		return fmt.Errorf("event type %s belongs on %s, not on %s", env.Event.Type(), want, subject)
	}
	return nil
}
