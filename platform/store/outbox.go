package store

import (
	"fmt"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
)

// OutboxRow is an event waiting to be published: the NATS message the
// relay sends (Nats-Msg-Id is in Header) and when it was emitted.
type OutboxRow struct {
	ID        string
	Subject   string
	Header    nats.Header
	Body      []byte
	CreatedAt time.Time
}

// Msg is the row as a NATS message.
func (r OutboxRow) Msg() *nats.Msg {
	return &nats.Msg{Subject: r.Subject, Header: r.Header, Data: r.Body}
}

// NewOutboxRow encodes an event as the message its type is published as
// (binary content mode, design §3), emitted at.
func NewOutboxRow(e *event.Event, at time.Time) (OutboxRow, error) {
	subject, ok := contracts.SubjectFor(e.Type())
	if !ok {
		return OutboxRow{}, fmt.Errorf("emit: no subject for event type %q", e.Type())
	}
	msg, err := bus.Encode(subject, e)
	if err != nil {
		return OutboxRow{}, fmt.Errorf("emit %s: %w", e.Type(), err)
	}
	body := msg.Data
	if body == nil {
		body = []byte{} // an event without data: stored as empty, never NULL
	}
	return OutboxRow{ID: e.ID(), Subject: subject, Header: msg.Header, Body: body, CreatedAt: at}, nil
}
