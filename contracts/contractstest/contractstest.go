// Package contractstest builds and opens events for the tests of the
// services and the platform, failing the test where the contract refuses
// one: a test's event is a valid event, or the test says why not.
package contractstest

import (
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/prsaga/prsaga/contracts"
)

// Envelope is the event contracts.New builds from its arguments, opened as
// the runner hands it to a handler.
func Envelope(t testing.TB, id, eventType, source, prID string, at time.Time, payload any, m contracts.Meta) contracts.Envelope {
	t.Helper()
	e, err := contracts.New(id, eventType, source, prID, at, payload, m)
	if err != nil {
		t.Fatalf("build %s %s: %v", eventType, id, err)
	}
	return Open(t, e)
}

// Open opens e as the runner does.
func Open(t testing.TB, e *event.Event) contracts.Envelope {
	t.Helper()
	env, err := contracts.Open(e)
	if err != nil {
		t.Fatalf("open %s %s: %v", e.Type(), e.ID(), err)
	}
	return env
}
