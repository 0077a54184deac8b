package runner_test

import (
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/prsaga/prsaga/platform/logging/logtest"
	"github.com/prsaga/prsaga/platform/runner"
)

// A missed heartbeat means the consumer's pull request was lost and nats.go
// pulled again after a second without deliveries: operators see it at
// info. Other consume errors are a pull request's statuses, at debug.
func TestMissedHeartbeatIsLoggedAtInfo(t *testing.T) {
	log, buf := logtest.New()
	runner.ConsumeError(log, jetstream.ErrNoHeartbeat)
	runner.ConsumeError(log, fmt.Errorf("consume: %w", jetstream.ErrNoHeartbeat))
	runner.ConsumeError(log, jetstream.ErrMaxBytesExceeded)

	lost := buf.Find(t, "pull request lost: no heartbeat for two intervals, pulled again")
	if len(lost) != 2 {
		t.Fatalf("lost-request lines: %d, want 2 (one per missed heartbeat); log:\n%s", len(lost), buf)
	}
	for _, r := range lost {
		if r["level"] != "INFO" || r["heartbeat"] != "500ms" {
			t.Errorf("lost-request line %v: want level INFO and heartbeat 500ms", r)
		}
	}
	other := buf.Find(t, "consume")
	if len(other) != 1 || other[0]["level"] != "DEBUG" || other[0]["err"] != jetstream.ErrMaxBytesExceeded.Error() {
		t.Errorf("other consume errors: %v, want one DEBUG line with the error", other)
	}
}
