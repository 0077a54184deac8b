package httpapi

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/logging"
	"github.com/prsaga/prsaga/services/ledger"
)

// timelineRow is one transition as the timeline shows it.
type timelineRow struct {
	ledger.Transition
	// Duration is how long the saga stayed in To: until the next
	// transition, or until now for the current state while in flight.
	Duration string
	Ongoing  bool
	Failed   bool // the move to MERGE_FAILED: its reason is the error
}

type timelinePage struct {
	frame
	Saga     ledger.Saga
	Rows     []timelineRow
	Events   []ledger.Event
	Retried  string // the event id of a retry just sent
	CanRetry bool
	// TraceID is the OpenTelemetry trace of the current run ("" when its
	// events carry no trace context).
	TraceID string
	// Facts are what the run's events add (runfacts.go); Gantt draws the
	// transitions (gantt.go).
	Facts runFacts
	Gantt gantt
	// FixReceiver: the failure is a webhook delivery: fixing the receiver
	// comes before the retry.
	FixReceiver bool
}

// timeline shows one PR's saga: where it is, whether the code is merged,
// what failed, each transition with its time and duration, and its events.
func (a *API) timeline(w http.ResponseWriter, r *http.Request) {
	pr, s, evs, err := a.sagaEventsOf(r)
	if err != nil {
		a.failPage(w, r, err)
		return
	}
	now := a.now()
	s.Stuck = a.Timeouts.Stuck(s, now)
	p := timelinePage{frame: a.frame(r, pr, true), Saga: s, Rows: timelineRows(s, now), Events: evs,
		CanRetry: s.State == contracts.StateMergeFailed && a.accessOf(r).act, TraceID: traceID(evs, s.CorrelationID),
		Facts: factsOf(evs, s.CorrelationID), Gantt: ganttOf(s.Transitions, now)}
	p.Saga.AlreadyMerged = p.Facts.AlreadyMerged
	p.FixReceiver = s.State == contracts.StateMergeFailed && s.FailedStep == contracts.StateNotifying && p.Facts.FailCode == contracts.CodeWebhookFailed
	if id := r.URL.Query().Get("retried"); id != "" && contracts.ValidateEventID(id) == nil {
		p.Retried = id
	}
	a.render(w, r, http.StatusOK, "timeline", p)
}

func timelineRows(s ledger.Saga, now time.Time) []timelineRow {
	rows := make([]timelineRow, len(s.Transitions))
	for i, t := range s.Transitions {
		row := timelineRow{Transition: t, Failed: t.To == contracts.StateMergeFailed}
		switch {
		case i+1 < len(s.Transitions):
			row.Duration = round(s.Transitions[i+1].At.Sub(t.At))
		case t.To.InFlight():
			row.Duration, row.Ongoing = round(now.Sub(t.At)), true
		}
		rows[i] = row
	}
	return rows
}

func round(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(10 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// traceID is the trace of a run: the traceparent of its latest recorded
// event that has one (trace context propagates, so every event of a run
// is in one trace; a retry continues it).
func traceID(evs []ledger.Event, correlationID string) string {
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].CorrelationID != correlationID {
			continue
		}
		var ext struct {
			TraceParent string `json:"traceparent"`
		}
		if json.Unmarshal(evs[i].Event, &ext) != nil {
			continue
		}
		if id, _, err := logging.ParseTraceParent(ext.TraceParent); err == nil {
			return id
		}
	}
	return ""
}
