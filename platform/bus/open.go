package bus

import (
	"github.com/nats-io/nats.go"

	"github.com/prsaga/prsaga/contracts"
)

// Open reads a message that arrived on subject as every consumer does
// before its handler sees it: Decode, then contracts.OpenOn, which takes
// the producer, the failed step and whether it is a replay from the
// subject (a header that disagrees is refused). Its error is theirs,
// unwrapped, because it is the reason a dead-lettered message carries:
// Decode's matches ErrUndecodable (not a CloudEvent we can read),
// contracts.OpenOn's never does (an event that cannot be attributed to a
// saga). The runner and `prsaga reindex` both take messages through it, so
// that a rebuilt index holds what the indexer's consumer would have handed
// it.
func Open(subject string, h nats.Header, body []byte) (contracts.Envelope, error) {
	e, err := Decode(h, body)
	if err != nil {
		return contracts.Envelope{}, err
	}
	return contracts.OpenOn(subject, e)
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
