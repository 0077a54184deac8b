package httpapi_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/contracts/contractstest"
	"github.com/prsaga/prsaga/platform/step"
	"github.com/prsaga/prsaga/services/ledger"
	"github.com/prsaga/prsaga/services/ledger/httpapi"
)

// newAPI is the API over store on clock, with the ledger's own retrier.
func newAPI(store *ledger.Store, clock func() time.Time) *httpapi.API {
	return &httpapi.API{Sagas: store, Outbox: store, Now: clock, NewID: step.NewID,
		Retrier: &ledger.Retrier{Store: store, Proj: &ledger.Projector{Now: clock}, NewID: step.NewID}}
}

// project applies e to store in a transaction of its own, as the ledger's
// consumer does, stamping what it records with proj's clock.
func project(tb testing.TB, store *ledger.Store, proj *ledger.Projector, e *event.Event) {
	tb.Helper()
	l := &ledger.Ledger{Store: store, Proj: proj}
	if _, err := l.Apply(context.Background(), contractstest.Open(tb, e), slog.New(slog.DiscardHandler)); err != nil {
		tb.Fatal(err)
	}
}

// requested is the requested event of r, made at now.
func requested(tb testing.TB, r contracts.Request) *event.Event {
	tb.Helper()
	e, err := contracts.NewRequested(step.NewID(), "https://forge.test", now, r, "")
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

// follow is svc's event of typ caused by cause, made at now.
func follow(tb testing.TB, cause *event.Event, typ, svc string, p any) *event.Event {
	tb.Helper()
	e, err := contracts.Follow(cause, step.NewID(), typ, svc, now, p)
	if err != nil {
		tb.Fatal(err)
	}
	return e
}
