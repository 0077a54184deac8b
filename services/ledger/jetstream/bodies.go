package jetstream

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
)

// Bodies reads the saga events the stream still holds (up to its last
// message as of the call) and returns, by event id, the structured JSON of
// those whose ids are in want: the bodies retention emptied in saga_event,
// for prsaga ledger verify --stream. It reads with an ordered consumer (no
// acks, nothing left on the server). A message that does not decode is
// skipped: the ledger never recorded it either.
func Bodies(ctx context.Context, js jetstream.JetStream, want map[string]bool) (map[string][]byte, error) {
	out := map[string][]byte{}
	if len(want) == 0 {
		return out, nil
	}
	c, err := js.OrderedConsumer(ctx, contracts.Stream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{"prsaga.merge.>"},
		DeliverPolicy:  jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", contracts.Stream, err)
	}
	info, err := c.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", contracts.Stream, err)
	}
	left := info.NumPending
	if left == 0 {
		return out, nil
	}
	it, err := c.Messages(jetstream.PullMaxMessages(256))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", contracts.Stream, err)
	}
	defer it.Stop()
	stop := context.AfterFunc(ctx, it.Stop) // Next takes no context
	defer stop()
	for ; left > 0 && len(out) < len(want); left-- {
		m, err := it.Next()
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("read %s: %w", contracts.Stream, err)
		}
		e, err := bus.Decode(m.Headers(), m.Data())
		if err != nil || !want[e.ID()] {
			continue
		}
		b, err := json.Marshal(e)
		if err != nil {
			return nil, fmt.Errorf("encode %s: %w", e.ID(), err)
		}
		out[e.ID()] = b
	}
	return out, nil
}
