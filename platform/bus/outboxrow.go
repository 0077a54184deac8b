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
	subject, err := contracts.SubjectOf(e)
	if err != nil {
		return store.OutboxRow{}, fmt.Errorf("emit %s: %w", e.Type(), err)
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
//
// A row keeps the subject it was written with. Rows written before step
// failures and replays had subjects of their own (the bare
// prsaga.merge.step_failed, a replay on its trigger's subject) are sent on
// the subject their event has now, so that an upgrade with unsent rows in
// an outbox loses none of them.
func RowMsg(r store.OutboxRow) *nats.Msg {
	subject := r.Subject
	route, ok := contracts.RouteOf(subject)
	if !ok || !route.Replay && nats.Header(r.Header).Get(headerPrefix+contracts.ExtReplayOf) != "" {
		if e, err := Decode(r.Header, r.Body); err == nil {
			if s, err := contracts.SubjectOf(e); err == nil {
				subject = s
			}
		}
	}
	return &nats.Msg{Subject: subject, Header: r.Header, Data: r.Body}
}
