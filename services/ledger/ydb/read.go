package ydb

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	ydbsdk "github.com/ydb-platform/ydb-go-sdk/v3"
	"github.com/ydb-platform/ydb-go-sdk/v3/query"

	"github.com/prsaga/prsaga/contracts"
	pydb "github.com/prsaga/prsaga/platform/ydb"
	"github.com/prsaga/prsaga/services/ledger"
)

// MaxEvents bounds the events and transitions listed for one PR or run.
const MaxEvents = 1000

// SagaRow reads the PR's row, or ledger.ErrNotFound.
func (s *Tables) SagaRow(ctx context.Context, prID string) (contracts.Row, error) {
	row, err := s.db.QueryRow(ctx, qSaga, prKey(prID))
	r, err := sagaRow(row, err, prID)
	if err == nil && !r.Exists {
		return contracts.Row{}, fmt.Errorf("%s: %w", prID, ledger.ErrNotFound)
	}
	return r, err
}

// Transitions lists the PR's history, oldest first.
func (s *Tables) Transitions(ctx context.Context, prID string) ([]ledger.Transition, error) {
	out, err := pydb.Collect(ctx, s.db, qTransitions, prKey(prID), func(row query.Row) (ledger.Transition, error) {
		t, _, err := scanTransition(row, false)
		return t, err
	})
	return listed(out, err, "read transitions of %s", prID)
}

// RunEvent is one recorded event of a run (any); an error when the run has
// none.
func (s *Tables) RunEvent(ctx context.Context, correlationID string) (json.RawMessage, error) {
	row, err := s.db.QueryRow(ctx, qAnyEventOfRun, corrParams(correlationID))
	if err != nil {
		return nil, err
	}
	raw, err := scanText(row)
	if err != nil {
		return nil, err
	}
	return json.RawMessage(raw), nil
}

// ListRows returns the rows of one page of f, newest first. Each shape of
// filter is one constant statement over one index (VIEW idx_saga_state or
// idx_saga_repo); the list of all sagas runs the by-state one per state.
func (s *Tables) ListRows(ctx context.Context, f ledger.Filter) ([]contracts.Row, error) {
	if f.Stuck {
		return s.listStuck(ctx, f)
	}
	return s.listPage(ctx, f)
}

func (s *Tables) listPage(ctx context.Context, f ledger.Filter) ([]contracts.Row, error) {
	if f.State == "" && f.Repo == "" {
		return s.listAll(ctx, f)
	}
	q, p := listStatement(f)
	return s.sagas(ctx, q, p)
}

// listAll lists every state's page (one range of idx_saga_state each) and
// merges them newest first: the newest Limit+1 sagas overall are among
// the newest Limit+1 of each state.
func (s *Tables) listAll(ctx context.Context, f ledger.Filter) ([]contracts.Row, error) {
	return s.mergeRanges(ctx, contracts.States, f.Limit, func(st contracts.State) (string, ydbsdk.Params, bool) {
		g := f
		g.State = st
		q, p := listStatement(g)
		return q, p, true
	})
}

func pick(first bool, a, b string) string {
	if first {
		return a
	}
	return b
}

// listStuck runs the stuck statement once per in-flight state (each one
// range of idx_saga_state) and merges the pages newest first.
func (s *Tables) listStuck(ctx context.Context, f ledger.Filter) ([]contracts.Row, error) {
	return s.mergeRanges(ctx, contracts.Steps, f.Limit, func(st contracts.State) (string, ydbsdk.Params, bool) {
		cut, ok := f.StuckBefore[st]
		if !ok || (f.State != "" && f.State != st) {
			return "", nil, false
		}
		return qListStuck, listStuckParams(f, st, cut), true
	})
}

// mergeRanges runs the statement stmt gives for each of states (false:
// none for that state) and keeps the newest limit+1 rows of all.
func (s *Tables) mergeRanges(ctx context.Context, states []contracts.State, limit int,
	stmt func(contracts.State) (string, ydbsdk.Params, bool)) ([]contracts.Row, error) {
	var all []contracts.Row
	for _, st := range states {
		q, p, ok := stmt(st)
		if !ok {
			continue
		}
		rows, err := s.sagas(ctx, q, p)
		if err != nil {
			return nil, err
		}
		all = append(all, rows...)
	}
	return newestPage(all, limit), nil
}

// newestPage is the newest limit+1 of the pages of several ranges.
func newestPage(all []contracts.Row, limit int) []contracts.Row {
	slices.SortFunc(all, newestFirst)
	if len(all) > limit+1 {
		all = all[:limit+1]
	}
	return all
}

func newestFirst(a, b contracts.Row) int {
	if c := b.UpdatedAt.Compare(a.UpdatedAt); c != 0 {
		return c
	}
	return strings.Compare(b.PRID, a.PRID)
}

func (s *Tables) sagas(ctx context.Context, q string, p ydbsdk.Params) ([]contracts.Row, error) {
	return pydb.Collect(ctx, s.db, q, p, scanSaga)
}

// listed is what a read of a list returns: its rows, or its error said in
// terms of what it read.
func listed[T any](out []T, err error, format string, args ...any) ([]T, error) {
	if err != nil {
		return nil, fmt.Errorf(format+": %w", append(args, err)...)
	}
	return out, nil
}

// Events lists the events recorded for a PR, oldest first (at most
// MaxEvents). An unknown PR has none.
func (s *Tables) Events(ctx context.Context, prID string) ([]ledger.Event, error) {
	out, err := pydb.Collect(ctx, s.db, qEventsOfPR, prEventsParams(prID), scanEvent)
	return listed(out, err, "list events of %s", prID)
}

// RunTransitions lists a run's transitions (of every PR that carried it),
// oldest first, with the PR of the last.
func (s *Tables) RunTransitions(ctx context.Context, correlationID string) ([]ledger.Transition, string, error) {
	out, prID := []ledger.Transition{}, ""
	err := s.db.Query(ctx, qTransitionsOfRun, runParams(correlationID), func(row query.Row) error {
		t, pr, err := scanTransition(row, true)
		prID = pr
		out = append(out, t)
		return err
	})
	if err != nil {
		return nil, "", fmt.Errorf("read run %s: %w", correlationID, err)
	}
	return out, prID, nil
}

// RunEvents lists a run's events, oldest first.
func (s *Tables) RunEvents(ctx context.Context, correlationID string) ([]ledger.Event, error) {
	out, err := pydb.Collect(ctx, s.db, qEventsOfRun, runParams(correlationID), scanEvent)
	return listed(out, err, "read events of run %s", correlationID)
}

// RecentTransitions is the window w of the history, newest first
// (idx_transition_at_async, read stale: it may lag the last commits).
func (s *Tables) RecentTransitions(ctx context.Context, w ledger.StepWindow) ([]ledger.StepRow, error) {
	out := []ledger.StepRow{}
	err := s.db.QueryStale(ctx, qRecentTransitions, recentParams(w), func(row query.Row) error {
		r, err := scanStepRow(row)
		out = append(out, r)
		return err
	})
	return listed(out, err, "step durations")
}

// StuckRows returns at most limit rows in state last updated before
// cutoff, oldest first: one range of idx_saga_state.
func (s *Tables) StuckRows(ctx context.Context, state contracts.State, cutoff time.Time, limit int) ([]contracts.Row, error) {
	return s.sagas(ctx, qStuck, stuckParams(state, cutoff, limit))
}

// LatestEvent returns the run's most recently received event of a type.
func (s *Tables) LatestEvent(ctx context.Context, correlationID, eventType string) (ledger.Event, bool, error) {
	row, err := s.db.QueryRow(ctx, qLatestEvent, latestEventParams(correlationID, eventType))
	return scanLatest(row, err, correlationID, eventType)
}

// LastTransition returns the PR's most recent transition.
func (s *Tables) LastTransition(ctx context.Context, prID string) (ledger.Transition, bool, error) {
	row, err := s.db.QueryRow(ctx, qLastTransition, prKey(prID))
	if pydb.IsNoRows(err) {
		return ledger.Transition{}, false, nil
	}
	if err == nil {
		var t ledger.Transition
		if t, _, err = scanTransition(row, false); err == nil {
			return t, true, nil
		}
	}
	return ledger.Transition{}, false, fmt.Errorf("read last transition of %s: %w", prID, err)
}

// OutboxStatus says whether the ledger's outbox holds an event and whether
// the relay has published it.
func (s *Tables) OutboxStatus(ctx context.Context, eventID string) (held, sent bool, err error) {
	row, err := s.db.QueryRow(ctx, qOutboxStatus, outboxStatusParams(eventID))
	if pydb.IsNoRows(err) {
		return false, false, nil
	}
	if err != nil {
		return false, false, fmt.Errorf("read outbox row %s: %w", eventID, err)
	}
	sentAt, err := scanSentAt(row)
	if err != nil {
		return false, false, fmt.Errorf("read outbox row %s: %w", eventID, err)
	}
	return true, sentAt != nil, nil
}

// StateCounts counts sagas per state with the oldest updated_at of each,
// for the in-flight gauges and stats, without a scan that grows with the
// history: the in-flight states' ranges of idx_saga_state (as many entries
// as sagas in flight), the final states' counter rows, and the first entry
// of each final state's range.
func (s *Tables) StateCounts(ctx context.Context) (map[contracts.State]ledger.StateCount, error) {
	out := map[contracts.State]ledger.StateCount{}
	err := s.db.Query(ctx, qInFlightCounts, inFlightParams(), func(row query.Row) error {
		state, c, err := scanInFlightCount(row)
		if err != nil {
			return err
		}
		out[contracts.State(state)] = c
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("saga state counts: %w", err)
	}
	final := map[contracts.State]int64{}
	err = s.db.Query(ctx, qFinalCounts, nil, func(row query.Row) error {
		state, n, err := scanFinalCount(row)
		final[contracts.State(state)] += n
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("saga state counts: %w", err)
	}
	for state, n := range final {
		if n <= 0 {
			continue
		}
		row, err := s.db.QueryRow(ctx, qOldestOfState, stateParams(state))
		if err != nil && !pydb.IsNoRows(err) {
			return nil, fmt.Errorf("saga state counts: %w", err)
		}
		c := ledger.StateCount{Sagas: int(n)}
		if err == nil {
			if c.Oldest, err = scanOldest(row); err != nil {
				return nil, fmt.Errorf("saga state counts: %w", err)
			}
		}
		out[state] = c
	}
	return out, nil
}
