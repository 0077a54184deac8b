package store

import "time"

// OutboxRow is an event waiting to be published: the message the relay
// sends — subject, headers (Nats-Msg-Id among them) and body, already
// encoded by platform/bus — and when it was emitted. It names no transport
// type so that the step contract stays free of NATS.
type OutboxRow struct {
	ID        string
	Subject   string
	Header    map[string][]string
	Body      []byte
	CreatedAt time.Time
}
