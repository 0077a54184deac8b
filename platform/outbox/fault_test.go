package outbox_test

import (
	"errors"
	"testing"

	"github.com/prsaga/prsaga/platform/fault"
	"github.com/prsaga/prsaga/platform/outbox"
)

// The relay's fault point fires after JetStream acked the publish and
// before the row is marked sent: the row stays unsent and the next round
// publishes it again, which JetStream's dedupe window drops.
func TestAfterPublishFaultRepublishesNotLoses(t *testing.T) {
	ctx := testContext(t)
	b, db := busDB(t)
	defer fault.Arm(fault.Rule{Point: fault.AfterPublish("relaytest"), Action: fault.Error})()
	r := &outbox.Relay{Store: db, Pub: b, Log: testLogger(t), Service: "relaytest"}
	emit(t, db, "e-1")
	if _, err := r.Flush(ctx); !errors.Is(err, fault.ErrInjected) {
		t.Fatalf("flush: got %v, want the injected fault", err)
	}
	if streamMsgs(t, b) != 1 || pending(t, db) != 1 {
		t.Fatalf("after a fault after publish: %d in stream, %d unsent; want 1, 1", streamMsgs(t, b), pending(t, db))
	}
	if n, err := r.Flush(ctx); n != 1 || err != nil {
		t.Fatalf("second flush: got %d, %v; want 1, nil", n, err)
	}
	if streamMsgs(t, b) != 1 || pending(t, db) != 0 {
		t.Fatalf("after the republish: %d in stream, %d unsent; want 1 (deduped), 0", streamMsgs(t, b), pending(t, db))
	}
}
