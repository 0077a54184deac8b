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

// A runner asks for half its pull size at a time; below the largest intake,
// that half is more than the intake holds, so a pull cannot be delivered
// whole before a worker takes from the intake (the lost-request race needs
// a whole pull delivered while nats.go is still sending it). Never less
// than two messages per worker, never more than the largest intake.
func TestPullHalfExceedsTheIntake(t *testing.T) {
	for workers := 1; workers <= 8; workers++ {
		for _, batch := range []int{1, 2, 16, 64} {
			ahead := min(batch*workers, runner.MaxPullAhead)
			got := runner.PullMax(workers, ahead)
			if got < 2*workers || got < ahead {
				t.Errorf("workers %d, ahead %d: pull %d, want at least %d and %d", workers, ahead, got, 2*workers, ahead)
			}
			if ahead < runner.MaxPullAhead/2 && got/2 <= ahead {
				t.Errorf("workers %d, ahead %d: pull %d asks for %d at a time, not more than the intake holds", workers, ahead, got, got/2)
			}
			if ahead >= runner.MaxPullAhead/2 && got > max(2*workers, runner.MaxPullAhead) {
				t.Errorf("workers %d, ahead %d: pull %d, want at most %d", workers, ahead, got, runner.MaxPullAhead)
			}
		}
	}
}
