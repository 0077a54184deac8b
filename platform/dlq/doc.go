// Package dlq reads and redrives stream PRSAGA_DLQ: the dead letters that
// platform/bus.DeadLetter leaves when a consumer cannot attribute a message
// to a saga (design §3). It is the one place that knows how a dead letter
// is read back and put back; `prsaga dlq` only parses flags and prints.
//
// It talks to NATS only, never to a service's API or store: the DLQ must
// be readable when the services are not.
package dlq
