package contracts

import (
	"slices"
	"strings"

	"github.com/cloudevents/sdk-go/v2/event"
)

// Routes: the subject an event travels on says who published it.
//
// CloudEvent headers are written by whoever publishes, so `source`,
// `replayof` and `attempt` prove nothing on a shared NATS. The subject does:
// the NATS server lets each user publish only its own subjects
// (deploy/nats/accounts.conf), so every producer with a rule attached to it
// has subjects of its own — each step service its success and its
// step_failed, the ledger its replays and timed_out — and a consumer takes
// the producer, the failed step and whether an event is a replay from the
// subject it consumed. Headers that disagree with the subject are refused
// (dead-lettered with the reason). A client's subject, requested, carries
// only first attempts.

// A Route is what the subject a message arrived on proves about it.
type Route struct {
	Subject string
	// Type is the only event type published on Subject.
	Type string
	// Producer is the service that alone may publish on Subject; "" for
	// prsaga.merge.requested, which clients publish (the forge, and the
	// ledger for the requests its API accepts).
	Producer string
	// Replay marks the ledger's replays of a step's trigger (a retry).
	Replay bool
	// Step is the failed step fixed by a step_failed subject ("" otherwise).
	Step State
}

// Subject prefixes of the producer-specific subjects.
const (
	// SubjectStepFailedPrefix + a step service's name: that service's
	// failures, e.g. prsaga.merge.step_failed.merger.
	SubjectStepFailedPrefix = "prsaga.merge.step_failed."
	// SubjectReplayPrefix + a trigger's name: the ledger's replays of it,
	// e.g. prsaga.merge.replay.validated.
	SubjectReplayPrefix = "prsaga.merge.replay."
)

// SubjectStepFailedAny matches every service's step_failed subject (a
// consumer filter).
const SubjectStepFailedAny = SubjectStepFailedPrefix + "*"

// triggerNames are the replayable triggers and the last token of their
// replay subject.
var triggerNames = []struct {
	typ, name string
}{
	{TypeMergeRequested, "requested"},
	{TypeMergeValidated, "validated"},
	{TypeMerged, "merged"},
	{TypeNotified, "notified"},
}

// StepFailedSubject is the subject on which service publishes its step's
// failures.
func StepFailedSubject(service string) string { return SubjectStepFailedPrefix + service }

// ReplaySubject is the subject of the ledger's replays of a trigger type;
// "" for a type that is never replayed.
func ReplaySubject(eventType string) string {
	for _, t := range triggerNames {
		if t.typ == eventType {
			return SubjectReplayPrefix + t.name
		}
	}
	return ""
}

var routes = buildRoutes()

func buildRoutes() map[string]Route {
	rs := []Route{
		{Subject: SubjectMergeRequested, Type: TypeMergeRequested},
		{Subject: SubjectMergeValidated, Type: TypeMergeValidated, Producer: ServiceValidator},
		{Subject: SubjectMerged, Type: TypeMerged, Producer: ServiceMerger},
		{Subject: SubjectNotified, Type: TypeNotified, Producer: ServiceNotifier},
		{Subject: SubjectIndexed, Type: TypeIndexed, Producer: ServiceIndexer},
		{Subject: SubjectTimedOut, Type: TypeTimedOut, Producer: ServiceLedger},
		{Subject: SubjectStateChanged, Type: TypeStateChanged, Producer: ServiceLedger},
	}
	for _, step := range Steps {
		svc := StepService(step)
		rs = append(rs, Route{Subject: StepFailedSubject(svc), Type: TypeStepFailed, Producer: svc, Step: step})
	}
	for _, t := range triggerNames {
		rs = append(rs, Route{Subject: ReplaySubject(t.typ), Type: t.typ, Producer: ServiceLedger, Replay: true})
	}
	m := make(map[string]Route, len(rs))
	for _, r := range rs {
		m[r.Subject] = r
	}
	return m
}

// RouteOf returns the route of a subject, and false for a subject that
// carries no saga event.
func RouteOf(subject string) (Route, bool) {
	r, ok := routes[subject]
	return r, ok
}

// Routes lists every route, sorted by subject.
func Routes() []Route {
	out := make([]Route, 0, len(routes))
	for _, r := range routes {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Route) int { return strings.Compare(a.Subject, b.Subject) })
	return out
}

// PublishSubjects lists the subjects a service may publish saga events on
// ("" names the clients' subjects): what its NATS user is allowed.
func PublishSubjects(service string) []string {
	var out []string
	for _, r := range Routes() {
		if r.Producer == service {
			out = append(out, r.Subject)
		}
	}
	if service == ServiceLedger {
		// The ledger publishes the merge requests its API accepts.
		out = append(out, SubjectMergeRequested)
		slices.Sort(out)
	}
	return out
}

// SubjectsOf lists the subjects an event type arrives on — its original's
// and, for a trigger, the ledger's replays — for a consumer's filter.
func SubjectsOf(eventType string) []string {
	var out []string
	for _, r := range Routes() {
		if r.Type == eventType {
			out = append(out, r.Subject)
		}
	}
	return out
}

// SubjectOf returns the subject an event is published on: its type's, the
// replay subject of its type when it is a replay, and for step_failed the
// subject of the service that sent it. The event was built by prsaga (New,
// Follow), so its source and replayof are its own.
func SubjectOf(e *event.Event) (string, error) {
	replay := ""
	if v, ok := Extensions(e)[ExtReplayOf]; ok {
		replay, _ = v.(string)
	}
	var subject string
	switch {
	case replay != "":
		subject = ReplaySubject(e.Type())
		if subject == "" {
			return "", fieldErr("replayof", "is not allowed on %s", truncate(e.Type()))
		}
	case e.Type() == TypeStepFailed:
		svc, ok := strings.CutPrefix(e.Source(), Source(""))
		if !ok || !slices.ContainsFunc(Steps, func(s State) bool { return StepService(s) == svc }) {
			return "", fieldErr("source", "%s must come from a step service, not %q", TypeStepFailed, truncate(e.Source()))
		}
		subject = StepFailedSubject(svc)
	default:
		for _, r := range routes {
			if r.Type == e.Type() && !r.Replay {
				subject = r.Subject
			}
		}
		if subject == "" {
			return "", fieldErr("type", "unknown event type %q", truncate(e.Type()))
		}
	}
	return subject, nil
}

// lockAnswer: the validator keeps the PR's lock, so a retry at MERGING
// passes it (the ledger's replay of validated goes to the validator, which
// hands the merger a validated only under the lock). A retry whose run lost
// the lock is failed by the validator on the merge step's behalf, with
// code lock_lost and nothing else.
func lockAnswer(r Route, f *StepFailed) bool {
	return r.Producer == ServiceValidator && f.Step == StateMerging && f.Code == CodeLockLost
}

// checkRoute checks an event's attributes against the route it arrived on:
// its type, its producer (source), replayof, and for step_failed the step.
// The subject decides; a header that says otherwise is an error.
func checkRoute(r Route, e *event.Event, m Meta, p any) error {
	if e.Type() != r.Type {
		return fieldErr("type", "%s does not belong on subject %s (only %s does)", truncate(e.Type()), r.Subject, r.Type)
	}
	switch {
	case r.Producer == "" && strings.HasPrefix(e.Source(), Source("")) && e.Source() != SourceLedger:
		return fieldErr("source", "%q may not request merges", truncate(e.Source()))
	case r.Producer != "" && e.Source() != Source(r.Producer):
		return fieldErr("source", "%q disagrees with subject %s, which only %s publishes", truncate(e.Source()), r.Subject, Source(r.Producer))
	}
	switch {
	case r.Replay && m.ReplayOf == "":
		return fieldErr("replayof", "is missing on subject %s, which carries only replays", r.Subject)
	case !r.Replay && m.ReplayOf != "":
		if rs := ReplaySubject(r.Type); rs != "" {
			return fieldErr("replayof", "is not honoured on subject %s: replays arrive only on %s, from %s", r.Subject, rs, SourceLedger)
		}
		return fieldErr("replayof", "is not allowed on %s", r.Type)
	}
	if f, ok := p.(*StepFailed); ok && f.Step != r.Step && !lockAnswer(r, f) {
		return fieldErr("step", "%q disagrees with subject %s, which carries failures of %s only", truncate(string(f.Step)), r.Subject, r.Step)
	}
	return nil
}
