package outbox_test

import (
	"testing"
	"time"

	"github.com/prsaga/prsaga/platform/outbox"
	"github.com/prsaga/prsaga/platform/store"
)

// Rows the relay published are marked sent by the next transaction any
// caller commits, long before the relay's own mark is due.
func TestRelayRowsAreMarkedByTheNextCommit(t *testing.T) {
	b, db := busDB(t)
	run(t, &outbox.Relay{Store: db, Pub: b, Log: testLogger(t), Poll: time.Hour, MarkDelay: time.Hour})
	emit(t, db, "n-1", "n-2")
	waitFor(t, 5*time.Second, "both rows published", func() bool { return streamMsgs(t, b) == 2 })
	ctx := testContext(t)
	waitFor(t, 5*time.Second, "rows marked sent by a handler's commit", func() bool {
		if err := db.Update(ctx, func(store.Tx) error { return nil }); err != nil {
			t.Fatal(err)
		}
		return pending(t, db) == 0
	})
}
