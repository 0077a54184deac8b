package bus

import (
	"fmt"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/store"
)

// OutboxRow encodes an event as the message its type is published as
// (binary content mode, design §3), emitted at.
func OutboxRow(e *event.Event, at time.Time) (store.OutboxRow, error) {
	subject, ok := contracts.SubjectFor(e.Type())
	if !ok {
		return store.OutboxRow{}, fmt.Errorf("emit: no subject for event type %q", e.Type())
	}
	msg, err := Encode(subject, e)
	if err != nil {
		return store.OutboxRow{}, fmt.Errorf("emit %s: %w", e.Type(), err)
	}
	body := msg.Data
	if body == nil {
		body = []byte{} // an event without data: stored as empty, never NULL
	}
	return store.OutboxRow{ID: e.ID(), Subject: subject, Header: msg.Header, Body: body, CreatedAt: at}, nil
}

// RowMsg is an outbox row as the NATS message the relay publishes.
func RowMsg(r store.OutboxRow) *nats.Msg {
	return &nats.Msg{Subject: r.Subject, Header: r.Header, Data: r.Body}
}
