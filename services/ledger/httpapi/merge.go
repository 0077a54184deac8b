package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/cloudevents/sdk-go/v2/event"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/httpx"
	"github.com/prsaga/prsaga/platform/logging"
)

// mergeRequest is the JSON body of POST /api/v1/merge-requests: the
// requested payload of design §3 and an optional client reference.
type mergeRequest struct {
	contracts.Request
	ClientRef string `json:"client_ref"`
}

// accepted answers a merge request.
type accepted struct {
	EventID       string `json:"event_id"`
	CorrelationID string `json:"correlation_id"`
	PRID          string `json:"pr_id"`
}

// postMergeRequest publishes a requested event through the ledger's
// outbox: once it answers 202 the request is committed and will reach the
// bus. The body is the JSON payload, or a CloudEvent in structured
// (application/cloudevents+json) or binary (ce-* headers) HTTP mode. A
// CloudEvent keeps its own id, so a client resending it is deduplicated.
func (a *API) postMergeRequest(w http.ResponseWriter, r *http.Request) {
	var e *event.Event
	var err error
	if isCloudEvent(r.Header) {
		e, err = cloudEventRequest(w, r)
	} else {
		e, err = a.jsonRequest(w, r)
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	m, err := contracts.MetaOf(e)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if err := a.Outbox.Emit(r.Context(), e); err != nil {
		a.fail(w, r, err)
		return
	}
	// The first line of the run's trace (`prsaga trace`): when and from
	// whom the ledger took the request.
	if env, err := contracts.Open(e); err == nil {
		logging.ForEvent(a.log(), env).InfoContext(r.Context(), "merge request accepted", "requested_by", env.Req().RequestedBy)
	}
	httpx.WriteJSON(w, http.StatusAccepted, accepted{EventID: e.ID(), CorrelationID: m.CorrelationID, PRID: e.Subject()})
}

func (a *API) jsonRequest(w http.ResponseWriter, r *http.Request) (*event.Event, error) {
	var body mergeRequest
	if err := httpx.DecodeJSON(w, r, &body); err != nil {
		return nil, err
	}
	if err := body.Request.ValidateIdentity(); err != nil {
		return nil, invalid{"the request names no valid PR", err}
	}
	errs := []error{body.Request.Validate()}
	if len(body.ClientRef) > contracts.MaxClientRef {
		errs = append(errs, &contracts.FieldError{Field: "client_ref", Problem: "is longer than 256 bytes"})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, invalid{"invalid merge request", err}
	}
	id := a.NewID()
	m := contracts.Meta{CorrelationID: id, Attempt: 1, ClientRef: body.ClientRef}
	// A caller's W3C trace context (HTTP traceparent/tracestate headers)
	// puts the saga in the caller's trace; without one the run gets a
	// trace of its own.
	if tp := r.Header.Get("traceparent"); tp != "" {
		if _, _, err := logging.ParseTraceParent(tp); err == nil {
			m.TraceParent = tp
			if ts := r.Header.Get("tracestate"); len(ts) <= contracts.MaxTraceState {
				m.TraceState = ts
			}
		}
	}
	e, err := contracts.New(id, contracts.TypeMergeRequested, contracts.SourceLedger, body.Request.PRID, a.now(), body.Request, m)
	if err != nil {
		return nil, invalid{"invalid merge request", err}
	}
	return e, nil
}

// cloudEventRequest reads a requested CloudEvent and checks it as a
// consumer would, and every payload field besides.
func cloudEventRequest(w http.ResponseWriter, r *http.Request) (*event.Event, error) {
	if strings.HasPrefix(r.Header.Get("Content-Type"), event.ApplicationCloudEventsBatchJSON) {
		return nil, httpx.Errorf(http.StatusUnsupportedMediaType, "batches are not accepted: post one CloudEvent")
	}
	r.Body = http.MaxBytesReader(w, r.Body, httpx.MaxBody)
	e, err := cehttp.NewEventFromHTTPRequest(r)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, httpx.Errorf(http.StatusRequestEntityTooLarge, "request body exceeds %d bytes", httpx.MaxBody)
		}
		return nil, httpx.Errorf(http.StatusBadRequest, "not a CloudEvent: %s", oneLine(err.Error()))
	}
	// The sdk does not validate what it reads (a structured event without
	// a source gets through), and what the outbox cannot encode for the
	// bus would otherwise fail as a 500 after the checks below.
	if _, err := bus.Encode(contracts.SubjectMergeRequested, e); err != nil {
		return nil, httpx.Errorf(http.StatusBadRequest, "not a valid CloudEvent: %s", oneLine(err.Error()))
	}
	if e.Type() != contracts.TypeMergeRequested {
		return nil, httpx.Errorf(http.StatusBadRequest, "type %q: only %s may be posted here", truncate(e.Type()), contracts.TypeMergeRequested)
	}
	// Only the ledger speaks as /prsaga/ledger, and only its retries set
	// replayof (design §3). A client's event claiming either could name a
	// running saga's correlation id and so pass that run's validator lock.
	if strings.HasPrefix(e.Source(), "/prsaga/") {
		return nil, invalid{"the event claims to come from prsaga", &contracts.FieldError{Field: "source",
			Problem: fmt.Sprintf("%q is prsaga's own: a client's event needs a source URI of its own", truncate(e.Source()))}}
	}
	if _, ok := contracts.Extensions(e)[contracts.ExtReplayOf]; ok {
		return nil, invalid{"the event claims to be a replay", &contracts.FieldError{Field: contracts.ExtReplayOf,
			Problem: "is set only on the ledger's own replays (use POST /api/v1/sagas/{pr}/retry)"}}
	}
	env, err := contracts.Open(e)
	if err != nil {
		return nil, invalid{"the event names no valid PR or breaks the contract", err}
	}
	if err := env.ValidatePayload(); err != nil {
		return nil, invalid{"invalid merge request", err}
	}
	return e, nil
}

func isCloudEvent(h http.Header) bool {
	return strings.HasPrefix(strings.ToLower(h.Get("Content-Type")), "application/cloudevents") || h.Get("Ce-Specversion") != ""
}

// invalid is a validation failure with a summary; fail answers it 400 with
// every bad field named.
type invalid struct {
	summary string
	err     error
}

func (e invalid) Error() string { return e.summary + ": " + e.err.Error() }
func (e invalid) Unwrap() error { return e.err }

func oneLine(s string) string { return truncate(strings.ReplaceAll(s, "\n", " ")) }
