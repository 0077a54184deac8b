package contracts

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
)

// Meta is the saga bookkeeping every event carries as CloudEvent extensions.
type Meta struct {
	CorrelationID string // the id of the run's requested event
	CausationID   string // the id of the event this one reacts to
	Attempt       int    // 1 for a step's first run, +1 per retry
	ReplayOf      string // on a replayed event: the original event's id
	ClientRef     string // a client's own reference
	TraceParent   string // W3C trace context
	TraceState    string
}

// The longest client reference and trace context MetaOf accepts (the
// ledger's API holds a request's body and headers to the same).
const (
	MaxClientRef   = 256
	MaxTraceParent = 256
	MaxTraceState  = 512
)

// New builds a CloudEvent with the payload as JSON data, subject = pr id,
// and the extensions of m. It validates the result against CloudEvents and
// against the contract's id and extension rules (the checks MetaOf makes), so
// that a producer's mistake fails where it is made, not in every consumer.
func New(id, eventType, source, prID string, at time.Time, payload any, m Meta) (*event.Event, error) {
	if err := ValidateEventID(id); err != nil {
		return nil, fmt.Errorf("build %s: %w", eventType, err)
	}
	data, err := json.Marshal(payload)
	if err != nil {
		return nil, fmt.Errorf("encode %s payload: %w", eventType, err)
	}
	e := event.New()
	e.SetID(id)
	e.SetType(eventType)
	e.SetSource(source)
	e.SetSubject(prID)
	e.SetTime(at.UTC())
	// json.Marshal's output is compact, valid JSON already: SetData would
	// marshal it once more (a third of New's cost) to learn nothing new.
	e.SetDataContentType(event.ApplicationJSON)
	e.DataEncoded = data
	setExt(&e, ExtCorrelationID, m.CorrelationID)
	setExt(&e, ExtCausationID, m.CausationID)
	if m.Attempt > 0 {
		e.SetExtension(ExtAttempt, strconv.Itoa(m.Attempt))
	}
	setExt(&e, ExtReplayOf, m.ReplayOf)
	setExt(&e, ExtClientRef, m.ClientRef)
	setExt(&e, ExtTraceParent, m.TraceParent)
	setExt(&e, ExtTraceState, m.TraceState)
	if err := e.Validate(); err != nil {
		return nil, fmt.Errorf("build %s: %w", eventType, err)
	}
	if _, err := MetaOf(&e); err != nil {
		return nil, fmt.Errorf("build %s: %w", eventType, err)
	}
	return &e, nil
}

// NewRequested builds a client's merge request. Its id is the run's
// correlation id, by definition (design §3).
func NewRequested(id, source string, at time.Time, r Request, clientRef string) (*event.Event, error) {
	return New(id, TypeMergeRequested, source, r.PRID, at, r, Meta{CorrelationID: id, Attempt: 1, ClientRef: clientRef})
}

// Follow builds the event a service emits in reaction to cause: same
// correlation id, causation = cause's id, same attempt and trace context.
func Follow(cause *event.Event, id, eventType, service string, at time.Time, payload any) (*event.Event, error) {
	m, err := MetaOf(cause)
	if err != nil {
		return nil, err
	}
	return New(id, eventType, Source(service), cause.Subject(), at, payload, m.Next(cause.ID()))
}

// Next is the bookkeeping of an event that reacts to the event causeID
// carrying m: same run, attempt, client reference and trace.
func (m Meta) Next(causeID string) Meta {
	return Meta{
		CorrelationID: m.CorrelationID,
		CausationID:   causeID,
		Attempt:       m.Attempt,
		ClientRef:     m.ClientRef,
		TraceParent:   m.TraceParent,
		TraceState:    m.TraceState,
	}
}

func setExt(e *event.Event, name, v string) {
	if v != "" {
		e.SetExtension(name, v)
	}
}

// MetaOf reads and checks the saga extensions of an event. A requested event
// without a correlation id gets its own id (it starts the run); any other
// event without one is invalid.
func MetaOf(e *event.Event) (Meta, error) {
	ext := Extensions(e)
	str := func(name string) string {
		v, ok := ext[name]
		if !ok {
			return ""
		}
		if s, ok := v.(string); ok {
			return s
		}
		return fmt.Sprint(v)
	}
	m := Meta{
		CorrelationID: str(ExtCorrelationID),
		CausationID:   str(ExtCausationID),
		ReplayOf:      str(ExtReplayOf),
		ClientRef:     str(ExtClientRef),
		TraceParent:   str(ExtTraceParent),
		TraceState:    str(ExtTraceState),
		Attempt:       1,
	}
	if a := str(ExtAttempt); a != "" {
		n, err := strconv.Atoi(a)
		if err != nil || n < 1 || n > 1000 {
			return Meta{}, fieldErr(ExtAttempt, "%q is not a positive integer up to 1000", truncate(a))
		}
		m.Attempt = n
	}
	if m.CorrelationID == "" {
		if e.Type() != TypeMergeRequested {
			return Meta{}, fieldErr(ExtCorrelationID, "is missing")
		}
		m.CorrelationID = e.ID()
	}
	if e.Type() == TypeMergeRequested && m.ReplayOf == "" && m.CorrelationID != e.ID() {
		return Meta{}, fieldErr(ExtCorrelationID, "%q of a requested event must equal its id %q", truncate(m.CorrelationID), e.ID())
	}
	// A request starts a run at attempt 1; only the ledger's replay of it
	// (a retry) carries a later attempt. Accepting more from a client would
	// let it inflate the run's attempts and outrank the retries' failures.
	if e.Type() == TypeMergeRequested && m.ReplayOf == "" && m.Attempt != 1 {
		return Meta{}, fieldErr(ExtAttempt, "%d on a requested event that is not a replay: a request starts its run at attempt 1", m.Attempt)
	}
	for name, v := range map[string]string{ExtCorrelationID: m.CorrelationID, ExtCausationID: m.CausationID, ExtReplayOf: m.ReplayOf} {
		if v == "" {
			continue
		}
		if err := ValidateEventID(v); err != nil {
			var fe *FieldError
			if errors.As(err, &fe) {
				err = fieldErr(name, "%s", fe.Problem)
			}
			return Meta{}, err
		}
	}
	if len(m.ClientRef) > MaxClientRef || len(m.TraceParent) > MaxTraceParent || len(m.TraceState) > MaxTraceState {
		return Meta{}, fieldErr("extensions", "clientref, traceparent or tracestate is too long")
	}
	return m, nil
}

// Decode reads an event's JSON data into v.
func Decode(e *event.Event, v any) error {
	if err := json.Unmarshal(e.Data(), v); err != nil {
		return fieldErr("data", "is not a valid %s payload: %s", e.Type(), err)
	}
	return nil
}

// Envelope is a received saga event: checked attributes, its meta, and its
// payload decoded and validated into the struct its type calls for.
type Envelope struct {
	Event   *event.Event
	Meta    Meta
	Payload any // *Request, *Validated, *Merged, *Notified, *Indexed, *StepFailed, *TimedOut or *StateChanged
	// Route is what the subject it arrived on proves: its producer, whether
	// it is a replay, the failed step.
	Route Route
}

// Req returns the request fields every saga payload carries.
func (e Envelope) Req() Request {
	switch p := e.Payload.(type) {
	case *Request:
		return *p
	case *Validated:
		return p.Request
	case *Merged:
		return p.Request
	case *Notified:
		return p.Request
	case *Indexed:
		return p.Request
	case *StepFailed:
		return p.Request
	case *TimedOut:
		return p.Request
	case *StateChanged:
		repo, n, _ := ParsePRID(p.PRID)
		return Request{PRID: p.PRID, Repo: repo, PRNumber: n}
	}
	return Request{}
}

// Open checks an event that prsaga holds already — one it built, or one a
// consumer admitted and stored — as if it arrived on the subject it is
// published on (SubjectOf). What arrives from the bus is opened with
// OpenOn and the subject it was consumed from.
func Open(e *event.Event) (Envelope, error) {
	subject, err := SubjectOf(e)
	if err != nil {
		return Envelope{}, err
	}
	return OpenOn(subject, e)
}

// OpenOn checks an event that arrived on subject against the contract: the
// subject's route (type, producer, replay, failed step: routes.go), id,
// extensions, payload decoding and identity (pr_id, repo, number, subject).
// An error here means the event cannot be attributed to a saga: dead-letter
// it. The payload's other fields are checked by ValidatePayload, because an
// invalid request must still be answered.
func OpenOn(subject string, e *event.Event) (Envelope, error) {
	if e.Source() == "" {
		return Envelope{}, fieldErr("source", "is missing")
	}
	if err := ValidateEventID(e.ID()); err != nil {
		return Envelope{}, err
	}
	if e.SpecVersion() != event.CloudEventsVersionV1 {
		return Envelope{}, fieldErr("specversion", "%q is not 1.0", truncate(e.SpecVersion()))
	}
	var p any
	switch e.Type() {
	case TypeMergeRequested:
		p = new(Request)
	case TypeMergeValidated:
		p = new(Validated)
	case TypeMerged:
		p = new(Merged)
	case TypeNotified:
		p = new(Notified)
	case TypeIndexed:
		p = new(Indexed)
	case TypeStepFailed:
		p = new(StepFailed)
	case TypeTimedOut:
		p = new(TimedOut)
	case TypeStateChanged:
		p = new(StateChanged)
	default:
		return Envelope{}, fieldErr("type", "unknown event type %q", truncate(e.Type()))
	}
	route, ok := RouteOf(subject)
	if !ok {
		return Envelope{}, fieldErr("nats subject", "%s carries no saga event (design §3 lists the subjects)", truncate(subject))
	}
	m, err := MetaOf(e)
	if err != nil {
		return Envelope{}, err
	}
	if ct := e.DataContentType(); ct != "" && ct != event.ApplicationJSON && ct != "application/json; charset=utf-8" {
		return Envelope{}, fieldErr("datacontenttype", "%q is not application/json", truncate(ct))
	}
	if err := Decode(e, p); err != nil {
		return Envelope{}, err
	}
	if err := checkRoute(route, e, m, p); err != nil {
		return Envelope{}, err
	}
	env := Envelope{Event: e, Meta: m, Payload: p, Route: route}
	if sc, ok := p.(*StateChanged); ok {
		if err := sc.Validate(); err != nil {
			return Envelope{}, err
		}
	} else if err := env.Req().ValidateIdentity(); err != nil {
		return Envelope{}, err
	}
	switch s := e.Subject(); {
	case s == "":
		return Envelope{}, fieldErr("subject", "is missing (must be the pr_id %q)", env.Req().PRID)
	case s != env.Req().PRID:
		return Envelope{}, fieldErr("subject", "%q does not match pr_id %q", truncate(s), env.Req().PRID)
	}
	return env, nil
}

// ValidatePayload checks every field of the payload.
func (e Envelope) ValidatePayload() error {
	switch p := e.Payload.(type) {
	case *Request:
		return p.Validate()
	case *Validated:
		return p.Validate()
	case *Merged:
		return p.Validate()
	case *Notified:
		return p.Validate()
	case *Indexed:
		return p.Validate()
	case *StepFailed:
		return p.Validate()
	case *TimedOut:
		return p.Validate()
	case *StateChanged:
		return p.Validate()
	}
	return fieldErr("type", "has no payload")
}
