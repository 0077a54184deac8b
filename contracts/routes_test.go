package contracts_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/prsaga/prsaga/contracts"
)

// The routes of design §3, written down here apart from routes.go: for each
// subject, the one event type on it, the one source allowed to publish it
// ("" = any client that is not a prsaga service other than the ledger),
// whether it carries only replays, and for step_failed the step it fails.
var designRoutes = map[string]struct {
	typ, source string
	replay      bool
	step        contracts.State
}{
	"prsaga.merge.requested":             {typ: contracts.TypeMergeRequested},
	"prsaga.merge.validated":             {typ: contracts.TypeMergeValidated, source: "/prsaga/validator"},
	"prsaga.merge.merged":                {typ: contracts.TypeMerged, source: "/prsaga/merger"},
	"prsaga.merge.notified":              {typ: contracts.TypeNotified, source: "/prsaga/notifier"},
	"prsaga.merge.indexed":               {typ: contracts.TypeIndexed, source: "/prsaga/indexer"},
	"prsaga.merge.step_failed.validator": {typ: contracts.TypeStepFailed, source: "/prsaga/validator", step: contracts.StateValidating},
	"prsaga.merge.step_failed.merger":    {typ: contracts.TypeStepFailed, source: "/prsaga/merger", step: contracts.StateMerging},
	"prsaga.merge.step_failed.notifier":  {typ: contracts.TypeStepFailed, source: "/prsaga/notifier", step: contracts.StateNotifying},
	"prsaga.merge.step_failed.indexer":   {typ: contracts.TypeStepFailed, source: "/prsaga/indexer", step: contracts.StateIndexing},
	"prsaga.merge.timed_out":             {typ: contracts.TypeTimedOut, source: "/prsaga/ledger"},
	"prsaga.merge.replay.requested":      {typ: contracts.TypeMergeRequested, source: "/prsaga/ledger", replay: true},
	"prsaga.merge.replay.validated":      {typ: contracts.TypeMergeValidated, source: "/prsaga/ledger", replay: true},
	"prsaga.merge.replay.merged":         {typ: contracts.TypeMerged, source: "/prsaga/ledger", replay: true},
	"prsaga.merge.replay.notified":       {typ: contracts.TypeNotified, source: "/prsaga/ledger", replay: true},
	"prsaga.saga.state_changed":          {typ: contracts.TypeStateChanged, source: "/prsaga/ledger"},
}

// accepts is the verdict of design §3 on an event of typ from source, with
// replayOf, failing step, arriving on subject.
func accepts(subject, typ, source, replayOf string, step contracts.State) bool {
	r, ok := designRoutes[subject]
	if !ok || r.typ != typ || r.replay != (replayOf != "") {
		return false
	}
	if r.source == "" {
		return !strings.HasPrefix(source, "/prsaga/") || source == "/prsaga/ledger"
	}
	return source == r.source && (typ != contracts.TypeStepFailed || step == r.step)
}

// The validator also fails MERGING, with lock_lost only, for a retry whose
// run lost the PR's lock.
func TestValidatorAnswersALostLockForMerging(t *testing.T) {
	subject := contracts.StepFailedSubject(contracts.ServiceValidator)
	for _, code := range []string{contracts.CodeLockLost, contracts.CodeConflict} {
		e := sagaEvent(t, contracts.TypeStepFailed, "/prsaga/validator", "", contracts.StateMerging)
		var f contracts.StepFailed
		if err := contracts.Decode(e, &f); err != nil {
			t.Fatal(err)
		}
		f.Code = code
		if err := e.SetData(event.ApplicationJSON, f); err != nil {
			t.Fatal(err)
		}
		_, err := contracts.OpenOn(subject, e)
		if got, want := err == nil, code == contracts.CodeLockLost; got != want {
			t.Errorf("validator's step_failed(MERGING, %s): accepted=%v (%v), want %v", code, got, err, want)
		}
		if _, err := contracts.OpenOn(contracts.StepFailedSubject(contracts.ServiceNotifier), withSource(e, "/prsaga/notifier")); err == nil {
			t.Errorf("the notifier's step_failed(MERGING, %s) accepted: only the validator answers a lost lock", code)
		}
	}
}

func withSource(e *event.Event, source string) *event.Event {
	c := e.Clone()
	c.SetSource(source)
	return &c
}

func TestRoutesAreTheDesignsRoutes(t *testing.T) {
	var got []string
	for _, r := range contracts.Routes() {
		got = append(got, r.Subject)
		d, ok := designRoutes[r.Subject]
		if !ok {
			t.Errorf("route %s is not in design §3", r.Subject)
			continue
		}
		want := contracts.Route{Subject: r.Subject, Type: d.typ, Producer: strings.TrimPrefix(d.source, "/prsaga/"), Replay: d.replay, Step: d.step}
		if r != want {
			t.Errorf("route %+v, want %+v", r, want)
		}
	}
	if len(got) != len(designRoutes) {
		t.Errorf("%d routes %v, want the %d of design §3", len(got), got, len(designRoutes))
	}
}

// sagaEvent builds an event of typ without Open's checks (New checks only
// the id and extensions), failing step for step_failed and timed_out.
func sagaEvent(t testing.TB, typ, source, replayOf string, step contracts.State) *event.Event {
	t.Helper()
	e, err := buildEvent(typ, source, replayOf, step)
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	return e
}

func buildEvent(typ, source, replayOf string, step contracts.State) (*event.Event, error) {
	req := validRequest()
	sha := strings.Repeat("ab", 20)
	var payload any
	switch typ {
	case contracts.TypeMergeRequested:
		payload = req
	case contracts.TypeMergeValidated:
		payload = contracts.Validated{Request: req}
	case contracts.TypeMerged:
		payload = contracts.Merged{Request: req, MergeSHA: sha}
	case contracts.TypeNotified:
		payload = contracts.Notified{Request: req, MergeSHA: sha}
	case contracts.TypeIndexed:
		payload = contracts.Indexed{Request: req, MergeSHA: sha}
	case contracts.TypeStepFailed:
		payload = contracts.StepFailed{Request: req, Step: step, Code: contracts.CodeChecksFailed, Reason: "red"}
	case contracts.TypeTimedOut:
		payload = contracts.TimedOut{Request: req, Step: step, Deadline: time.Now(), Diagnosis: "slow"}
	case contracts.TypeStateChanged:
		payload = contracts.StateChanged{PRID: req.PRID, FromState: contracts.StateMerging, ToState: contracts.StateNotifying}
	default:
		payload = req
	}
	id, m := "evt-2", contracts.Meta{CorrelationID: "run-1", Attempt: 1}
	if typ == contracts.TypeMergeRequested {
		id = "run-1"
	}
	if replayOf != "" {
		id, m.Attempt, m.ReplayOf = "evt-3", 2, replayOf
	}
	return contracts.New(id, typ, source, req.PRID, time.Now(), payload, m)
}

// TestOpenOnEverySubject opens every event type, from every kind of source,
// as an original and as a replay, for every step a failure can name, on
// every subject — the design's, the retired bare step_failed, an unknown
// one — and holds OpenOn's verdict to the design's routes.
func TestOpenOnEverySubject(t *testing.T) {
	subjects := []string{"prsaga.merge.step_failed", "prsaga.merge.replay.indexed", "prsaga.merge.bogus"}
	for s := range designRoutes {
		subjects = append(subjects, s)
	}
	slices.Sort(subjects)
	sources := []string{"https://forge.example/hooks", "/prsaga/mallory"}
	for _, s := range []string{contracts.ServiceValidator, contracts.ServiceMerger, contracts.ServiceNotifier, contracts.ServiceIndexer, contracts.ServiceLedger} {
		sources = append(sources, contracts.Source(s))
	}
	types := []string{contracts.TypeMergeRequested, contracts.TypeMergeValidated, contracts.TypeMerged, contracts.TypeNotified,
		contracts.TypeIndexed, contracts.TypeStepFailed, contracts.TypeTimedOut, contracts.TypeStateChanged}
	checked, accepted := 0, 0
	for _, typ := range types {
		steps := []contracts.State{""}
		if typ == contracts.TypeStepFailed || typ == contracts.TypeTimedOut {
			steps = contracts.Steps
		}
		for _, step := range steps {
			for _, source := range sources {
				for _, replayOf := range []string{"", "evt-1"} {
					e := sagaEvent(t, typ, source, replayOf, step)
					for _, subject := range subjects {
						want := accepts(subject, typ, source, replayOf, step)
						env, err := contracts.OpenOn(subject, e)
						if got := err == nil; got != want {
							t.Errorf("%s from %s (replayof %q, step %q) on %s: accepted=%v (%v), want %v",
								typ, source, replayOf, step, subject, got, err, want)
							continue
						}
						checked++
						if err != nil {
							if !errors.Is(err, contracts.ErrInvalid) {
								t.Errorf("OpenOn's error %q does not match ErrInvalid", err)
							}
							continue
						}
						accepted++
						if env.Route.Subject != subject {
							t.Errorf("envelope's route %q, want %q", env.Route.Subject, subject)
						}
						if s, err := contracts.SubjectOf(e); err != nil || s != subject && !(subject == contracts.SubjectMergeRequested && source == contracts.SourceLedger) {
							t.Errorf("SubjectOf(%s from %s, replayof %q) = %q (%v); it is accepted on %s", typ, source, replayOf, s, err, subject)
						}
					}
				}
			}
		}
	}
	if accepted < len(designRoutes) {
		t.Fatalf("only %d of %d cases accepted: every route should take at least one event", accepted, checked)
	}
}

// TestForgedHeadersRefused: what a forge's user (allowed only
// prsaga.merge.requested) or a step service (allowed only its own step_failed)
// can write into headers does not make it the ledger or another step.
func TestForgedHeadersRefused(t *testing.T) {
	for _, tc := range []struct {
		name, subject string
		e             *event.Event
		reason        string
	}{
		{"a forged replay on the request subject", contracts.SubjectMergeRequested,
			sagaEvent(t, contracts.TypeMergeRequested, contracts.SourceLedger, "run-0", ""), "replays arrive only on prsaga.merge.replay.requested"},
		{"a request claiming attempt 5", contracts.SubjectMergeRequested,
			withAttempt(t, sagaEvent(t, contracts.TypeMergeRequested, "https://forge.example", "", ""), 5), "attempt"},
		{"the merger failing VALIDATING on its own subject", contracts.StepFailedSubject(contracts.ServiceMerger),
			sagaEvent(t, contracts.TypeStepFailed, "/prsaga/merger", "", contracts.StateValidating), "carries failures of MERGING only"},
		{"the merger's failure claiming the validator's source", contracts.StepFailedSubject(contracts.ServiceMerger),
			sagaEvent(t, contracts.TypeStepFailed, "/prsaga/validator", "", contracts.StateValidating), "which only /prsaga/merger publishes"},
		{"a validated on the request subject", contracts.SubjectMergeRequested,
			sagaEvent(t, contracts.TypeMergeValidated, "/prsaga/validator", "", ""), "does not belong on subject"},
		{"a replay subject without replayof", contracts.ReplaySubject(contracts.TypeMergeValidated),
			sagaEvent(t, contracts.TypeMergeValidated, contracts.SourceLedger, "", ""), "carries only replays"},
		{"the retired bare step_failed subject", "prsaga.merge.step_failed",
			sagaEvent(t, contracts.TypeStepFailed, "/prsaga/validator", "", contracts.StateValidating), "carries no saga event"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := contracts.OpenOn(tc.subject, tc.e)
			if err == nil || !errors.Is(err, contracts.ErrInvalid) || !strings.Contains(err.Error(), tc.reason) {
				t.Fatalf("OpenOn = %v; want ErrInvalid saying %q", err, tc.reason)
			}
		})
	}
}

func withAttempt(t *testing.T, e *event.Event, n int) *event.Event {
	t.Helper()
	e.SetExtension(contracts.ExtAttempt, fmt.Sprint(n))
	return e
}

func TestPublishAndConsumeSubjects(t *testing.T) {
	for svc, want := range map[string][]string{
		contracts.ServiceValidator: {"prsaga.merge.step_failed.validator", "prsaga.merge.validated"},
		contracts.ServiceMerger:    {"prsaga.merge.merged", "prsaga.merge.step_failed.merger"},
		contracts.ServiceNotifier:  {"prsaga.merge.notified", "prsaga.merge.step_failed.notifier"},
		contracts.ServiceIndexer:   {"prsaga.merge.indexed", "prsaga.merge.step_failed.indexer"},
		contracts.ServiceLedger: {"prsaga.merge.replay.merged", "prsaga.merge.replay.notified", "prsaga.merge.replay.requested",
			"prsaga.merge.replay.validated", "prsaga.merge.requested", "prsaga.merge.timed_out", "prsaga.saga.state_changed"},
	} {
		if got := contracts.PublishSubjects(svc); !slices.Equal(got, want) {
			t.Errorf("PublishSubjects(%s) = %v, want %v", svc, got, want)
		}
	}
	if got, want := contracts.SubjectsOf(contracts.TypeMergeValidated), []string{"prsaga.merge.replay.validated", "prsaga.merge.validated"}; !slices.Equal(got, want) {
		t.Errorf("SubjectsOf(validated) = %v, want %v", got, want)
	}
}

// FuzzOpenOnRoute holds OpenOn to the design's routes for any subject, type,
// source, replayof and step.
func FuzzOpenOnRoute(f *testing.F) {
	for s, r := range designRoutes {
		f.Add(s, r.typ, r.source, "", string(r.step))
		f.Add(s, r.typ, "https://forge.example", "evt-1", string(r.step))
		f.Add(s, r.typ, "/prsaga/ledger", "evt-1", "")
	}
	f.Add("prsaga.merge.step_failed", contracts.TypeStepFailed, "/prsaga/merger", "", "MERGING")
	f.Add("prsaga.merge.requested", contracts.TypeMergeRequested, "/prsaga/ledger", "orig-1", "")
	f.Fuzz(func(t *testing.T, subject, typ, source, replayOf, step string) {
		e, err := buildEvent(typ, source, replayOf, contracts.State(step))
		if err != nil {
			return // New refuses it: OpenOn never sees it
		}
		_, err = contracts.OpenOn(subject, e)
		if got, want := err == nil, accepts(subject, typ, source, replayOf, contracts.State(step)); got != want {
			t.Fatalf("OpenOn(%q, %s from %q, replayof %q, step %q) accepted=%v (%v), want %v", subject, typ, source, replayOf, step, got, err, want)
		}
		if err != nil && !errors.Is(err, contracts.ErrInvalid) {
			t.Fatalf("OpenOn error %q does not match ErrInvalid", err)
		}
	})
}
