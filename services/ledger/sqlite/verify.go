package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/services/ledger"

	psqlite "github.com/prsaga/prsaga/platform/sqlite"
)

var _ ledger.LogReader = (*Tables)(nil)

// EachRecorded walks pr_saga, saga_transition and saga_event in pr_id
// order within one read transaction: WAL gives it a snapshot, so a ledger
// writing meanwhile is neither blocked nor seen half-way. The three
// tables are read side by side (a merge on pr_id), one PR in memory at a
// time, whatever the size of the history.
func (s *Tables) EachRecorded(ctx context.Context, fn func(ledger.Recorded) error) error {
	tx, err := s.db.Reader().BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("begin snapshot: %w", err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, `SELECT `+sagaColumns+` FROM pr_saga ORDER BY pr_id`)
	if err != nil {
		return fmt.Errorf("read pr_saga: %w", err)
	}
	defer rows.Close()
	trs, err := tx.QueryContext(ctx, `SELECT pr_id, seq, correlation_id, from_state, to_state, reason,
		event_id, inferred, actor, at FROM saga_transition ORDER BY pr_id, seq`)
	if err != nil {
		return fmt.Errorf("read saga_transition: %w", err)
	}
	defer trs.Close()
	evs, err := tx.QueryContext(ctx, selectEvents+` ORDER BY pr_id, received_at, event_id`)
	if err != nil {
		return fmt.Errorf("read saga_event: %w", err)
	}
	defer evs.Close()

	row, rowOK, err := nextRow(rows)
	if err != nil {
		return err
	}
	tr, trOK, err := nextTransition(trs)
	if err != nil {
		return err
	}
	ev, evOK, err := nextEvent(evs)
	if err != nil {
		return err
	}
	for rowOK || trOK || evOK {
		// The smallest pr_id among the three heads is the next PR.
		var pr string
		for _, c := range []struct {
			ok bool
			id string
		}{{rowOK, row.PRID}, {trOK, tr.pr}, {evOK, ev.PRID}} {
			if c.ok && (pr == "" || c.id < pr) {
				pr = c.id
			}
		}
		rec := ledger.Recorded{PRID: pr, Transitions: []ledger.Transition{}}
		if rowOK && row.PRID == pr {
			rec.Row = row
			if row, rowOK, err = nextRow(rows); err != nil {
				return err
			}
		}
		for trOK && tr.pr == pr {
			rec.Transitions = append(rec.Transitions, tr.Transition)
			if tr, trOK, err = nextTransition(trs); err != nil {
				return err
			}
		}
		for evOK && ev.PRID == pr {
			rec.Events = append(rec.Events, ev)
			if ev, evOK, err = nextEvent(evs); err != nil {
				return err
			}
		}
		if err := fn(rec); err != nil {
			return err
		}
	}
	return nil
}

func nextRow(rows *sql.Rows) (contracts.Row, bool, error) {
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return contracts.Row{}, false, fmt.Errorf("read pr_saga: %w", err)
		}
		return contracts.Row{}, false, nil
	}
	r, err := scanSaga(rows)
	if err != nil {
		return contracts.Row{}, false, fmt.Errorf("read pr_saga: %w", err)
	}
	return r, true, nil
}

type prTransition struct {
	pr string
	ledger.Transition
}

func nextTransition(rows *sql.Rows) (prTransition, bool, error) {
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return prTransition{}, false, fmt.Errorf("read saga_transition: %w", err)
		}
		return prTransition{}, false, nil
	}
	var t prTransition
	var from, to string
	var at int64
	if err := rows.Scan(&t.pr, &t.Seq, &t.CorrelationID, &from, &to, &t.Reason, &t.EventID, &t.Inferred, &t.Actor, &at); err != nil {
		return prTransition{}, false, fmt.Errorf("read saga_transition: %w", err)
	}
	t.From, t.To, t.At = contracts.State(from), contracts.State(to), fromMicros(at)
	return t, true, nil
}

func nextEvent(rows *sql.Rows) (ledger.Event, bool, error) {
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return ledger.Event{}, false, fmt.Errorf("read saga_event: %w", err)
		}
		return ledger.Event{}, false, nil
	}
	var e ledger.Event
	var at, stored int64
	var raw string
	if err := rows.Scan(&e.EventID, &e.PRID, &e.CorrelationID, &e.Type, &e.Status, &e.Reason, &at, &stored, &raw); err != nil {
		return ledger.Event{}, false, fmt.Errorf("read saga_event: %w", err)
	}
	e.ReceivedAt, e.StoredAt, e.Event = fromMicros(at), fromMicros(stored), bodyOf(raw)
	return e, true, nil
}

// bodyOf is a stored event body; a pruned one (retention empties it) is
// nil, which encodes as JSON null.
func bodyOf(raw string) []byte {
	if raw == "" {
		return nil
	}
	return []byte(raw)
}

// PrunedEventIDs lists the events whose bodies retention emptied.
func (s *Tables) PrunedEventIDs(ctx context.Context) (map[string]bool, error) {
	out, err := psqlite.ScanSet(s.db.QueryContext(ctx, `SELECT event_id FROM saga_event WHERE event = ''`))
	if err != nil {
		return nil, fmt.Errorf("read pruned events: %w", err)
	}
	return out, nil
}
