// Package emitted reads what a step committed to its outbox the way the
// relay will publish it and a consumer will open it: each unsent row
// decoded into a CloudEvent (platform/bus) and opened into its typed
// payload (contracts). Handler and service tests assert on events, not on
// rows; this is the one place that turns one into the other. For tests
// only.
package emitted

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/step"
	"github.com/prsaga/prsaga/platform/store"
)

// Outbox is the part of a store read here; every store.DB has it.
type Outbox interface {
	Unsent(ctx context.Context, limit int) ([]store.OutboxRow, error)
}

// Event is one unsent outbox row and the event it carries.
type Event struct {
	Row store.OutboxRow
	Env contracts.Envelope
}

// maxRows bounds one read: more than any test commits.
const maxRows = 10000

// Read returns the unsent outbox rows of db, oldest first, each decoded
// and opened. A row that does not decode or open fails the test: the
// relay would publish it and no consumer could read it. Payloads are not
// validated here (a test that wants them valid says so).
func Read(t testing.TB, db Outbox) []Event {
	t.Helper()
	rows, err := db.Unsent(context.Background(), maxRows)
	if err != nil {
		t.Fatalf("read the outbox: %v", err)
	}
	out := make([]Event, 0, len(rows))
	for _, row := range rows {
		e, err := bus.Decode(nats.Header(row.Header), row.Body)
		if err != nil {
			t.Fatalf("decode outbox row %s on %s: %v", row.ID, row.Subject, err)
		}
		env, err := contracts.Open(e)
		if err != nil {
			t.Fatalf("open outbox row %s (%s): %v", row.ID, e.Type(), err)
		}
		out = append(out, Event{Row: row, Env: env})
	}
	return out
}

// On returns the events of the unsent rows on subject, oldest first.
func On(t testing.TB, db Outbox, subject string) []contracts.Envelope {
	t.Helper()
	var out []contracts.Envelope
	for _, ev := range Read(t, db) {
		if ev.Row.Subject == subject {
			out = append(out, ev.Env)
		}
	}
	return out
}

// Committer is a store that commits a step and keeps its outbox; every
// store.DB is one.
type Committer interface {
	Outbox
	Update(ctx context.Context, fn func(tx store.Tx) error) error
}

// Answer commits c into db and returns the one event it put in the
// outbox, its payload validated: a handler's answer to one event. No
// commit, another number of rows or an invalid payload fails the test.
func Answer(t testing.TB, db Committer, c step.Commit) contracts.Envelope {
	t.Helper()
	if c == nil {
		t.Fatal("no commit")
	}
	if err := db.Update(context.Background(), func(tx store.Tx) error { return c(tx) }); err != nil {
		t.Fatal(err)
	}
	evs := Read(t, db)
	if len(evs) != 1 {
		t.Fatalf("outbox = %d rows; want the one answer", len(evs))
	}
	env := evs[0].Env
	if err := env.ValidatePayload(); err != nil {
		t.Errorf("answer does not validate: %v", err)
	}
	return env
}
