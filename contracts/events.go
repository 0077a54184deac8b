package contracts

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

// NATS subjects of the events with one producer (routes.go adds each step
// service's step_failed and the ledger's replays).
const (
	SubjectMergeRequested = "prsaga.merge.requested"
	SubjectMergeValidated = "prsaga.merge.validated"
	SubjectMerged         = "prsaga.merge.merged"
	SubjectNotified       = "prsaga.merge.notified"
	SubjectIndexed        = "prsaga.merge.indexed"
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

// DLQSubject is where a consumer dead-letters what it cannot attribute.
func DLQSubject(consumer string) string { return DLQSubjectPrefix + consumer }

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
