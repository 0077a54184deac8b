package ledger

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/prsaga/prsaga/contracts"
)

var (
	// ErrNotFound: the ledger has no saga for the PR.
	ErrNotFound = errors.New("saga not found")
	// ErrConflict: a conditional write lost a race (the row's version moved,
	// or another writer created the row first). Retry with the fresh row.
	ErrConflict = errors.New("saga changed concurrently")
)

// MaxRunEvents bounds the recorded events of one PR that the projection
// reads to settle which run owns the row: a PR with more (thousands of runs
// requested and refused) is settled from its oldest MaxRunEvents.
const MaxRunEvents = 10_000

// Event statuses in saga_event.
const (
	StatusApplied = "applied"
	StatusIgnored = "ignored"
)

// Tx is one open write transaction of the ledger's store: the saga tables
// and the service's outbox. Everything written through it commits or rolls
// back together. It is bound to the context of its transaction and is not
// safe for concurrent use. The transaction may run more than once (the
// store retries lock contention), so callers must keep side effects out.
type Tx interface {
	// Saga reads the PR's row within the transaction; Exists is false when
	// there is none.
	Saga(prID string) (contracts.Row, error)
	// EventRecorded reports whether saga_event already holds the event.
	EventRecorded(eventID string) (bool, error)
	// SaveSaga writes next as the PR's row: an insert with version 1 when
	// prev does not exist, otherwise one conditional update
	// (... WHERE pr_id = ? AND version = prev.Version) that sets version
	// prev.Version+1. A lost race on either returns ErrConflict.
	SaveSaga(prev, next contracts.Row) error
	// AddTransitions appends ts to the PR's history, numbering them after
	// its last transition, and returns them with Seq set.
	AddTransitions(prID string, ts []Transition) ([]Transition, error)
	// RecordEvent stores one received event in saga_event.
	RecordEvent(e Event) error
	// LatestEvent returns the most recently received saga_event of a run
	// with the given type (either status); found is false when there is none.
	LatestEvent(correlationID, eventType string) (e Event, found bool, err error)
	// EventsOf lists the events recorded for a PR (every run, either
	// status), oldest first, at most MaxRunEvents: what Derive folds when
	// runs compete for the row.
	EventsOf(prID string) ([]Event, error)
	// RetryAnswer returns the answer stored under an Idempotency-Key.
	RetryAnswer(key string) (a RetryAnswer, found bool, err error)
	// SaveRetryAnswer stores the first answer given under an Idempotency-Key.
	SaveRetryAnswer(key string, a RetryAnswer) error
	TxOutbox
}

// FirstReader is a Tx that reads what Project looks at first in one
// query: whether saga_event holds the event, and the PR's row (as Saga
// reads it). An adapter that implements it saves the projection a
// statement per event; Project falls back to EventRecorded then Saga.
type FirstReader interface {
	EventAndSaga(eventID, prID string) (recorded bool, row contracts.Row, err error)
}

// TxOutbox is the part of Tx that the platform's transaction (store.Tx)
// provides as it is: an adapter's Tx embeds the transaction for it.
type TxOutbox interface {
	// Emit appends events to the outbox; the relay publishes them after commit.
	Emit(evs ...*event.Event) error
	// AfterCommit runs f once the transaction has committed.
	AfterCommit(f func())
}

// Saga is the API's view of one PR's saga (a pr_saga row).
type Saga struct {
	PRID          string          `json:"pr_id"`
	Repo          string          `json:"repo"`
	State         contracts.State `json:"state"`
	FailedStep    contracts.State `json:"failed_step"`
	LastError     string          `json:"last_error"`
	TimedOut      bool            `json:"timed_out"`
	Attempts      int             `json:"attempts"`
	MergeSHA      string          `json:"merge_sha"`
	Merged        bool            `json:"merged"`
	CorrelationID string          `json:"correlation_id"`
	CreatedAt     time.Time       `json:"created_at"`
	UpdatedAt     time.Time       `json:"updated_at"`
	// Stuck: in flight for longer than its state's timeout, so the
	// watchdog's next tick moves it (set by the API, which knows the
	// timeouts).
	Stuck bool `json:"stuck"`
	// TargetBranch is the branch the run merges into (from the run's
	// events); filled in for a single saga.
	TargetBranch string `json:"target_branch,omitempty"`
	// AlreadyMerged: the current run's merge found the PR's work already
	// in the target (merged before this run; nothing was written). From
	// the run's merged event; filled in for a single saga.
	AlreadyMerged bool `json:"already_merged,omitempty"`
	// Transitions is the PR's history, oldest first; filled in for a
	// single saga, left out of lists.
	Transitions []Transition `json:"transitions,omitempty"`
}

// Terminal reports whether the saga stopped (MERGED or MERGE_FAILED).
func (s Saga) Terminal() bool {
	return s.State == contracts.StateMerged || s.State == contracts.StateMergeFailed
}

// SagaOf is the view of a row.
func SagaOf(r contracts.Row) Saga {
	return Saga{
		PRID:          r.PRID,
		Repo:          r.Repo,
		State:         r.State,
		FailedStep:    r.FailedStep,
		LastError:     r.LastError,
		TimedOut:      r.TimedOut,
		Attempts:      r.Attempts,
		MergeSHA:      r.MergeSHA,
		Merged:        r.Merged,
		CorrelationID: r.CorrelationID,
		CreatedAt:     r.CreatedAt.UTC(),
		UpdatedAt:     r.UpdatedAt.UTC(),
	}
}

// Transition is one recorded state change of a PR's saga (saga_transition).
type Transition struct {
	Seq           int64           `json:"seq"`
	CorrelationID string          `json:"correlation_id"`
	From          contracts.State `json:"from_state"` // "" when the row was created
	To            contracts.State `json:"to_state"`
	Reason        string          `json:"reason"`
	// EventID is the event that caused it; for an operator's retry, the
	// replayed trigger event the retry put into the outbox.
	EventID string `json:"event_id"`
	// Inferred: a step whose own event had not been seen, skipped over by a
	// later outcome.
	Inferred bool `json:"inferred"`
	// Actor is who caused it: the event's source, or the operator of a retry.
	Actor string    `json:"actor,omitempty"`
	At    time.Time `json:"at"`
}

// Event is one received event as recorded in saga_event.
type Event struct {
	EventID       string `json:"event_id"`
	PRID          string `json:"pr_id"`
	CorrelationID string `json:"correlation_id"`
	Type          string `json:"type"`
	Status        string `json:"status"` // StatusApplied or StatusIgnored
	Reason        string `json:"reason"`
	// ReceivedAt is when the ledger projected it (its clock; the order of
	// the log).
	ReceivedAt time.Time `json:"received_at"`
	// StoredAt is when the stream stored it, as far as the ledger knows:
	// the time the transitions it caused carry (Projector). ReceivedAt
	// when it did not come from the stream, or was recorded before the
	// ledger kept this.
	StoredAt time.Time `json:"stored_at"`
	// Event is the whole CloudEvent in structured JSON form.
	Event json.RawMessage `json:"event"`
}

// Stats counts sagas per state and summarises how long each step takes.
type Stats struct {
	States map[contracts.State]int `json:"states"` // every state, zero included
	Total  int                     `json:"total"`
	// Steps holds, per in-flight state, the durations of finished visits:
	// from the transition into the state to the next transition of the PR,
	// both within Window.
	Steps map[contracts.State]StepStats `json:"steps"`
	// Window is the part of the history Steps summarises.
	Window StepWindow `json:"steps_window"`
	// DLQMessages counts what stream PRSAGA_DLQ holds; nil when unknown.
	DLQMessages *uint64 `json:"dlq_messages,omitempty"`
	// Recent are the window's transitions themselves (newest first), for
	// the dashboard's charts; not part of the API answer.
	Recent []StepRow `json:"-"`
}

// StepWindow bounds the history that step durations are computed from:
// the most recent transitions, at most Limit of them and none before
// Since. Reading the whole history does not scale (a million sagas are
// five million transitions); the bound keeps the read to an index range.
type StepWindow struct {
	Since time.Time `json:"since"`
	Limit int       `json:"max_transitions"`
	// Transitions is how many transitions the window held when read; Limit
	// of them means the count bound, not Since, cut the window short.
	Transitions int `json:"transitions"`
	// Oldest is the time of the oldest transition read (zero when none).
	Oldest time.Time `json:"oldest,omitzero"`
}

// The step durations' window of the API and the dashboard: the last day,
// at most the last 10,000 transitions (about 2,000 sagas).
const (
	StepWindowAge         = 24 * time.Hour
	StepWindowTransitions = 10_000
)

// RecentSteps is the window of the API and the dashboard at now.
func RecentSteps(now time.Time) StepWindow {
	return StepWindow{Since: now.Add(-StepWindowAge).UTC(), Limit: StepWindowTransitions}
}

// StepStats summarises one step's durations (nearest-rank percentiles).
type StepStats struct {
	Count int   `json:"count"`
	P50Ms int64 `json:"p50_ms"`
	P99Ms int64 `json:"p99_ms"`
}

// CloudEvent decodes the recorded event.
func (e Event) CloudEvent() (*event.Event, error) {
	var ce event.Event
	if err := json.Unmarshal(e.Event, &ce); err != nil {
		return nil, fmt.Errorf("decode recorded event %s: %w", e.EventID, err)
	}
	return &ce, nil
}
