package notifier

import (
	"fmt"

	"github.com/cloudevents/sdk-go/v2/binding/format"
	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/prsaga/prsaga/contracts"
)

// webhookBody is what a watcher is sent for a merged event: the event as a
// structured CloudEvent, without the trace context. The runner hands the
// handler the event with its traceparent naming the span of this handling
// — a new one every time the event is handled (a redelivery, a deployment
// restored from a backup catching up) — and a delivery id must always come
// with the same body (design §6: a receiver drops a repeat by its id).
func webhookBody(e *event.Event) ([]byte, error) {
	c := e.Clone()
	for _, ext := range []string{contracts.ExtTraceParent, contracts.ExtTraceState} {
		c.SetExtension(ext, nil) // nil removes it
	}
	b, err := format.JSON.Marshal(&c)
	if err != nil {
		return nil, fmt.Errorf("encode merged event: %w", err)
	}
	return b, nil
}
