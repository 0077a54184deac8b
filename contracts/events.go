package contracts

import "strings"

// CloudEvent types. The .v1 suffix is part of the contract.
const (
	TypeMergeRequested = "prsaga.merge.requested.v1"
	TypeMergeValidated = "prsaga.merge.validated.v1"
	TypeMerged         = "prsaga.merge.merged.v1"
	TypeNotified       = "prsaga.merge.notified.v1"
	TypeIndexed        = "prsaga.merge.indexed.v1"
	TypeStepFailed     = "prsaga.merge.step_failed.v1"
	TypeTimedOut       = "prsaga.merge.timed_out.v1"
	TypeStateChanged   = "prsaga.saga.state_changed.v1"
)

// NATS subjects, one per event type.
const (
	SubjectMergeRequested = "prsaga.merge.requested"
	SubjectMergeValidated = "prsaga.merge.validated"
	SubjectMerged         = "prsaga.merge.merged"
	SubjectNotified       = "prsaga.merge.notified"
	SubjectIndexed        = "prsaga.merge.indexed"
	SubjectStepFailed     = "prsaga.merge.step_failed"
	SubjectTimedOut       = "prsaga.merge.timed_out"
	SubjectStateChanged   = "prsaga.saga.state_changed"
)

// Streams. PRSAGA holds the saga's events, PRSAGA_DLQ what could not be
// attributed to any saga.
const (
	Stream           = "PRSAGA"
	DLQStream        = "PRSAGA_DLQ"
	DLQSubjectPrefix = "prsaga.dlq."
	// DLQReasonHeader carries why a message was dead-lettered.
	DLQReasonHeader = "Prsaga-Dlq-Reason"
)

// StreamSubjects are the subjects stream PRSAGA holds.
var StreamSubjects = []string{"prsaga.merge.>", "prsaga.saga.>"}

// Durable consumer names. Renaming one makes JetStream start it from the
// beginning of the stream: these are wire names too.
const (
	ConsumerValidator     = "validator"
	ConsumerValidatorLock = "validator-lock"
	ConsumerMerger        = "merger"
	ConsumerNotifier      = "notifier"
	ConsumerIndexer       = "indexer"
	ConsumerLedger        = "ledger"
)

// Service names, used in `source` (/prsaga/<service>) and in log lines.
const (
	ServiceValidator = "validator"
	ServiceMerger    = "merger"
	ServiceNotifier  = "notifier"
	ServiceIndexer   = "indexer"
	ServiceLedger    = "ledger"
)

// Source returns the CloudEvent source of a prsaga service.
func Source(service string) string { return "/prsaga/" + service }

// SourceLedger is the source of replayed and watchdog events.
var SourceLedger = Source(ServiceLedger)

// Extension attribute names (CloudEvents: lower-case letters and digits).
const (
	ExtCorrelationID = "correlationid"
	ExtCausationID   = "causationid"
	ExtAttempt       = "attempt"
	ExtReplayOf      = "replayof"
	ExtClientRef     = "clientref"
	ExtTraceParent   = "traceparent"
	ExtTraceState    = "tracestate"
)

var subjects = map[string]string{
	TypeMergeRequested: SubjectMergeRequested,
	TypeMergeValidated: SubjectMergeValidated,
	TypeMerged:         SubjectMerged,
	TypeNotified:       SubjectNotified,
	TypeIndexed:        SubjectIndexed,
	TypeStepFailed:     SubjectStepFailed,
	TypeTimedOut:       SubjectTimedOut,
	TypeStateChanged:   SubjectStateChanged,
}

// SubjectFor returns the NATS subject of an event type and whether the type is known.
func SubjectFor(eventType string) (string, bool) {
	s, ok := subjects[eventType]
	return s, ok
}

// DLQSubject is where a consumer dead-letters what it cannot attribute.
func DLQSubject(consumer string) string { return DLQSubjectPrefix + consumer }

// producers names the only service allowed to emit each step event
// (design §3: defence in depth behind NATS permissions). Requested events come
// from clients; step_failed comes from the service of the step that failed
// (CheckSource admits the four step services, CheckStepSource, which needs
// the payload, pins the one).
var producers = map[string]string{
	TypeMergeValidated: ServiceValidator,
	TypeMerged:         ServiceMerger,
	TypeNotified:       ServiceNotifier,
	TypeIndexed:        ServiceIndexer,
	TypeTimedOut:       ServiceLedger,
	TypeStateChanged:   ServiceLedger,
}

// stepServices names the service that runs each step: the only source of
// that step's failure (a replayed step_failed does not exist, and the ledger's
// own verdict on a step is timed_out).
var stepServices = map[State]string{
	StateValidating: ServiceValidator,
	StateMerging:    ServiceMerger,
	StateNotifying:  ServiceNotifier,
	StateIndexing:   ServiceIndexer,
}

// StepService returns the service that runs step, "" for a state that is
// not a step.
func StepService(step State) string { return stepServices[step] }

// CheckStepSource reports whether source may fail step: a step_failed is
// accepted only from the service that runs the failed step, so that one
// service cannot end another's step (a notifier's step_failed(VALIDATING)
// would release the validator's lock and fail a run it never saw).
func CheckStepSource(step State, source string) error {
	s, ok := stepServices[step]
	if !ok {
		return fieldErr("step", "%q is not one of VALIDATING, MERGING, NOTIFYING, INDEXING", truncate(string(step)))
	}
	if source != Source(s) {
		return fieldErr("source", "a failure of step %s must come from %s, not %q", step, Source(s), truncate(source))
	}
	return nil
}

// triggers are the events the ledger may replay to retry a step.
var triggers = map[string]bool{
	TypeMergeRequested: true,
	TypeMergeValidated: true,
	TypeMerged:         true,
	TypeNotified:       true,
}

// CheckSource reports whether source may produce an event of this type.
// replayOf is the event's replayof extension: replays come from the ledger.
func CheckSource(eventType, source, replayOf string) error {
	if replayOf != "" {
		if source != SourceLedger {
			return fieldErr("replayof", "is honoured only on events from %s, not from %q", SourceLedger, source)
		}
		if !triggers[eventType] {
			return fieldErr("replayof", "is not allowed on %s", eventType)
		}
		return nil
	}
	switch eventType {
	case TypeMergeRequested:
		if strings.HasPrefix(source, "/prsaga/") && source != SourceLedger {
			return fieldErr("source", "%q may not request merges", source)
		}
		return nil
	case TypeStepFailed:
		for _, s := range []string{ServiceValidator, ServiceMerger, ServiceNotifier, ServiceIndexer} {
			if source == Source(s) {
				return nil
			}
		}
		return fieldErr("source", "%s must come from a step service, not %q", eventType, source)
	}
	p, ok := producers[eventType]
	if !ok {
		return fieldErr("type", "unknown event type %q", eventType)
	}
	if source != Source(p) {
		return fieldErr("source", "%s must come from %s, not %q", eventType, Source(p), source)
	}
	return nil
}
