// Package bus carries prsaga's CloudEvents over NATS JetStream: the binary /
// structured mapping (codec.go), the streams and durable consumers
// (jetstream.go). It knows nothing of sagas.
package bus
