// Package jetstream answers the ledger watchdog's questions about the bus
// (ledger.BusProbe) from JetStream's consumer and stream info: is the bus
// up, what a step's consumer has pending, unacknowledged or gave up on, and
// what it dead-lettered. It also counts PRSAGA_DLQ for the dashboard.
package jetstream
