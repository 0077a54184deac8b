package contracts_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/prsaga/prsaga/contracts"
)

// TestOpenChecksEverySource opens an event of every type, for every step a
// failure or timeout can name, from every kind of source, as an original
// and as a replay, and checks Open's verdict against the producer rules of
// design §3 as stated there: each step event comes only from its step's
// service, a failure only from the service of the failed step, timed_out and
// state_changed only from the ledger, requests from clients (never from a
// prsaga service other than the ledger), and replays only of triggers, only
// from the ledger.
func TestOpenChecksEverySource(t *testing.T) {
	services := []string{contracts.ServiceValidator, contracts.ServiceMerger, contracts.ServiceNotifier, contracts.ServiceIndexer, contracts.ServiceLedger}
	sources := []string{"https://forge.example/hooks", "/prsaga/mallory"}
	for _, s := range services {
		sources = append(sources, contracts.Source(s))
	}
	owner := map[contracts.State]string{
		contracts.StateValidating: contracts.ServiceValidator, contracts.StateMerging: contracts.ServiceMerger,
		contracts.StateNotifying: contracts.ServiceNotifier, contracts.StateIndexing: contracts.ServiceIndexer,
	}
	types := []string{contracts.TypeMergeRequested, contracts.TypeMergeValidated, contracts.TypeMerged, contracts.TypeNotified,
		contracts.TypeIndexed, contracts.TypeStepFailed, contracts.TypeTimedOut, contracts.TypeStateChanged}
	for _, typ := range types {
		steps := []contracts.State{""}
		if typ == contracts.TypeStepFailed || typ == contracts.TypeTimedOut {
			steps = contracts.Steps
		}
		for _, step := range steps {
			for _, source := range sources {
				for _, replay := range []bool{false, true} {
					want := false
					switch {
					case replay:
						want = source == contracts.SourceLedger && (typ == contracts.TypeMergeRequested || typ == contracts.TypeMergeValidated ||
							typ == contracts.TypeMerged || typ == contracts.TypeNotified)
					case typ == contracts.TypeMergeRequested:
						want = !strings.HasPrefix(source, "/prsaga/") || source == contracts.SourceLedger
					case typ == contracts.TypeMergeValidated:
						want = source == contracts.Source(contracts.ServiceValidator)
					case typ == contracts.TypeMerged:
						want = source == contracts.Source(contracts.ServiceMerger)
					case typ == contracts.TypeNotified:
						want = source == contracts.Source(contracts.ServiceNotifier)
					case typ == contracts.TypeIndexed:
						want = source == contracts.Source(contracts.ServiceIndexer)
					case typ == contracts.TypeStepFailed:
						want = source == contracts.Source(owner[step])
					case typ == contracts.TypeTimedOut, typ == contracts.TypeStateChanged:
						want = source == contracts.SourceLedger
					}
					name := fmt.Sprintf("%s/%s/%s/replay=%v", strings.TrimPrefix(typ, "prsaga."), step, source, replay)
					t.Run(name, func(t *testing.T) {
						replayOf := ""
						if replay {
							replayOf = "evt-1"
						}
						e := sagaEvent(t, typ, source, replayOf, step)
						_, err := contracts.Open(e)
						if got := err == nil; got != want {
							t.Fatalf("Open accepts=%v (%v), want accepts=%v", got, err, want)
						}
						if err != nil && !errors.Is(err, contracts.ErrInvalid) {
							t.Errorf("Open's error %q does not match ErrInvalid", err)
						}
					})
				}
			}
		}
	}
}

// TestOpenRequestAttempt: a client's request is attempt 1; a later attempt
// is the ledger's replay (replayof set) and nothing else.
func TestOpenRequestAttempt(t *testing.T) {
	req := validRequest()
	for _, tc := range []struct {
		name    string
		source  string
		meta    contracts.Meta
		wantErr string
	}{
		{"client, attempt 1", "https://forge.example/hooks", contracts.Meta{CorrelationID: "run-1", Attempt: 1}, ""},
		{"client, attempt absent (1)", "https://forge.example/hooks", contracts.Meta{CorrelationID: "run-1"}, ""},
		{"client, attempt 2", "https://forge.example/hooks", contracts.Meta{CorrelationID: "run-1", Attempt: 2}, "attempt"},
		{"client, attempt 1000", "https://forge.example/hooks", contracts.Meta{CorrelationID: "run-1", Attempt: 1000}, "attempt"},
		{"ledger without replayof, attempt 2", contracts.SourceLedger, contracts.Meta{CorrelationID: "run-1", Attempt: 2}, "attempt"},
		{"ledger replay, attempt 2", contracts.SourceLedger, contracts.Meta{CorrelationID: "run-1", Attempt: 2, ReplayOf: "run-1"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := event0(t, req, tc.source, tc.meta)
			_, err := contracts.Open(e)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Open: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, contracts.ErrInvalid)):
				t.Fatalf("Open = %v, want an ErrInvalid naming %q", err, tc.wantErr)
			}
		})
	}
}

// event0 builds a requested event with id run-1 without New's checks (New
// refuses what this test feeds Open).
func event0(t *testing.T, req contracts.Request, source string, m contracts.Meta) *event.Event {
	t.Helper()
	e, err := contracts.New("run-1", contracts.TypeMergeRequested, source, req.PRID, time.Now(), req, contracts.Meta{CorrelationID: m.CorrelationID, Attempt: 1, ReplayOf: m.ReplayOf})
	if err != nil {
		t.Fatal(err)
	}
	if m.Attempt > 0 {
		e.SetExtension(contracts.ExtAttempt, fmt.Sprint(m.Attempt))
	}
	return e
}
