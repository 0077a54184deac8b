package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/store"
)

// Tables is the ledger's tables on one store as its adapter (ledger/sqlite,
// ledger/ydb) provides them: queries only, rows in and rows out. What is
// more than a query (stats, the stuck rows of every state, a saga's target
// branch, the transactions) is Store's, written once for every adapter.
// Implementations are safe for concurrent use.
type Tables interface {
	// Check reports whether the ledger's tables exist.
	Check(ctx context.Context) error
	// Ping checks that the store answers.
	Ping(ctx context.Context) error
	// Bind is the ledger's view of an open transaction of the store (the
	// runner's, so that the projection commits with the inbox and outbox);
	// a transaction of another store is an error wrapping store.ErrWrongTx.
	Bind(tx store.Tx) (Tx, error)
	// SagaRow reads the PR's row, or ErrNotFound.
	SagaRow(ctx context.Context, prID string) (contracts.Row, error)
	// Transitions lists the PR's history, oldest first (never nil).
	Transitions(ctx context.Context, prID string) ([]Transition, error)
	// RunEvent is one recorded event of a run (any), as stored; an error
	// when the run has none.
	RunEvent(ctx context.Context, correlationID string) (json.RawMessage, error)
	// ListRows returns the rows of one page of f (already validated, with
	// its defaults): at most f.Limit+1, most recently updated first.
	ListRows(ctx context.Context, f Filter) ([]contracts.Row, error)
	// Events lists the events recorded for a PR, oldest first.
	Events(ctx context.Context, prID string) ([]Event, error)
	// RunTransitions lists a run's transitions, oldest first (never nil),
	// with the PR of the last ("" when none).
	RunTransitions(ctx context.Context, correlationID string) (ts []Transition, prID string, err error)
	// RunEvents lists a run's events, oldest first (never nil).
	RunEvents(ctx context.Context, correlationID string) ([]Event, error)
	// StuckRows returns at most limit rows in state last updated before
	// cutoff, oldest first, reading only the (state, updated_at) index.
	StuckRows(ctx context.Context, state contracts.State, cutoff time.Time, limit int) ([]contracts.Row, error)
	// StateCounts counts sagas per state with the oldest of each, without
	// a scan that grows with the history.
	StateCounts(ctx context.Context) (map[contracts.State]StateCount, error)
	// RecentTransitions is the window w of the history, newest first
	// (w.Limit is positive).
	RecentTransitions(ctx context.Context, w StepWindow) ([]StepRow, error)
	Evidence
}

// Store is the ledger's tables on one store: the adapter's queries and,
// written once over them, the ledger's transactions and the reads that
// compute. Safe for concurrent use.
type Store struct {
	Tables
	db store.DB
}

var _ WatchdogStore = (*Store)(nil)

// NewStore returns the ledger's store over db and its tables.
func NewStore(db store.DB, t Tables) *Store { return &Store{Tables: t, db: db} }

// Update runs fn in one write transaction and commits when it returns nil.
// fn may run more than once (lock contention, serialization conflicts) and
// must have no side effects outside tx.
func (s *Store) Update(ctx context.Context, fn func(tx Tx) error) error {
	return s.db.Update(ctx, func(tx store.Tx) error {
		t, err := s.Bind(tx)
		if err != nil {
			return err
		}
		return fn(t)
	})
}

// Emit commits events to the outbox in a transaction of their own: the
// relay publishes them. Used to publish what the API accepts reliably.
func (s *Store) Emit(ctx context.Context, evs ...*event.Event) error {
	return s.db.Update(ctx, func(tx store.Tx) error { return tx.Emit(evs...) })
}

// Get returns the PR's saga with its transitions and its run's target
// branch, or ErrNotFound.
func (s *Store) Get(ctx context.Context, prID string) (Saga, error) {
	r, err := s.SagaRow(ctx, prID)
	if err != nil {
		return Saga{}, err
	}
	saga := SagaOf(r)
	saga.TargetBranch = s.targetBranch(ctx, r.CorrelationID)
	if saga.Transitions, err = s.Transitions(ctx, prID); err != nil {
		return Saga{}, err
	}
	return saga, nil
}

// targetBranch reads the run's target branch from one of its events
// (every saga payload carries the request); "" when unknown.
func (s *Store) targetBranch(ctx context.Context, correlationID string) string {
	raw, err := s.RunEvent(ctx, correlationID)
	if err != nil {
		return ""
	}
	e, err := Event{Event: raw}.CloudEvent()
	if err != nil {
		return ""
	}
	var r contracts.Request
	if contracts.Decode(e, &r) != nil {
		return ""
	}
	return r.TargetBranch
}

// Run returns what the ledger recorded for one run: its transitions (of
// every PR that carried it; in practice one) and its events, oldest first;
// ErrNotFound for an unknown run.
func (s *Store) Run(ctx context.Context, correlationID string) (Run, error) {
	ts, prID, err := s.RunTransitions(ctx, correlationID)
	if err != nil {
		return Run{}, err
	}
	evs, err := s.RunEvents(ctx, correlationID)
	if err != nil {
		return Run{}, err
	}
	if prID == "" && len(evs) > 0 {
		prID = evs[0].PRID
	}
	if prID == "" {
		return Run{}, fmt.Errorf("run %s: %w", correlationID, ErrNotFound)
	}
	return Run{CorrelationID: correlationID, PRID: prID, Transitions: ts, Events: evs}, nil
}

// List returns one page of sagas, most recently updated first (see
// Filter). The filter is validated first.
func (s *Store) List(ctx context.Context, f Filter) (Page, error) {
	f = f.WithDefaults()
	if err := f.Validate(); err != nil {
		return Page{}, err
	}
	rows, err := s.ListRows(ctx, f)
	if err != nil {
		return Page{}, fmt.Errorf("list sagas: %w", err)
	}
	page := Page{Sagas: []Saga{}}
	for _, r := range rows {
		page.Sagas = append(page.Sagas, SagaOf(r))
	}
	// One row more than asked says whether another page follows.
	if len(page.Sagas) > f.Limit {
		page.Sagas = page.Sagas[:f.Limit]
		page.NextCursor = CursorAfter(page.Sagas[f.Limit-1]).String()
	}
	return page, nil
}

// Stuck returns at most limit in-flight rows last updated before their
// state's cutoff, oldest first: one index range per in-flight state.
func (s *Store) Stuck(ctx context.Context, cutoffs map[contracts.State]time.Time, limit int) ([]contracts.Row, error) {
	var out []contracts.Row
	for _, st := range contracts.Steps {
		cut, ok := cutoffs[st]
		if !ok {
			continue
		}
		rows, err := s.StuckRows(ctx, st, cut, limit)
		if err != nil {
			return nil, fmt.Errorf("read stuck sagas: %w", err)
		}
		out = append(out, rows...)
	}
	slices.SortFunc(out, func(a, b contracts.Row) int {
		if c := a.UpdatedAt.Compare(b.UpdatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.PRID, b.PRID)
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// Stats counts sagas per state and the durations of each step within the
// window w of the history: a few rows and one index range, however long
// the history.
func (s *Store) Stats(ctx context.Context, w StepWindow) (Stats, error) {
	st := Stats{States: map[contracts.State]int{}}
	for _, state := range contracts.States {
		st.States[state] = 0
	}
	counts, err := s.StateCounts(ctx)
	if err != nil {
		return Stats{}, fmt.Errorf("saga stats: %w", err)
	}
	for state, c := range counts {
		st.States[state] += c.Sagas
		st.Total += c.Sagas
	}
	var rows []StepRow
	if w.Limit > 0 {
		if rows, err = s.RecentTransitions(ctx, w); err != nil {
			return Stats{}, err
		}
	}
	st.Steps = StepDurations(rows)
	st.Recent = rows
	st.Window = w
	st.Window.Transitions = len(rows)
	for _, r := range rows {
		if st.Window.Oldest.IsZero() || r.At.Before(st.Window.Oldest) {
			st.Window.Oldest = r.At
		}
	}
	return st, nil
}
