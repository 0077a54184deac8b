// Package platform is the shared runtime of prsaga's services: the
// CloudEvents ⇄ JetStream mapping (bus), reading and redriving dead
// letters (dlq), the embedded NATS server (natsembed), the SQLite store
// with its outbox and inbox tables (sqlite), the outbox relay (outbox),
// the consume → transaction → ack loop (runner), logging and
// configuration. Services supply only their handlers and tables.
package platform
