package ledger

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/logging"
)

// WatchdogStore is what the watchdog reads and writes. Implementations are
// safe for concurrent use.
type WatchdogStore interface {
	// Ping checks that the store answers.
	Ping(ctx context.Context) error
	// Stuck returns at most limit in-flight rows last updated before their
	// state's cutoff, oldest first. It reads only through the (state,
	// updated_at) index: never a full scan of pr_saga.
	Stuck(ctx context.Context, cutoffs map[contracts.State]time.Time, limit int) ([]contracts.Row, error)
	// Update runs fn in one write transaction (see Tx).
	Update(ctx context.Context, fn func(tx Tx) error) error
	Evidence
}

// ErrBusClosed is what a BusProbe's Ping returns once its connection was
// closed on purpose (the process is stopping): the watchdog skips quietly.
var ErrBusClosed = errors.New("bus connection closed")

// BusProbe is what the watchdog asks of the message bus. Every answer is
// best effort: an error only makes the diagnosis vaguer, except Ping's,
// which skips the tick.
type BusProbe interface {
	// Ping checks that JetStream answers.
	Ping(ctx context.Context) error
	// Backlog describes a durable consumer's work in hand.
	Backlog(ctx context.Context, durable string) (Backlog, error)
	// DeadLetters counts what a consumer dead-lettered (prsaga.dlq.<consumer>).
	DeadLetters(ctx context.Context, consumer string) (uint64, error)
}

// Backlog is a consumer's view of its messages.
type Backlog struct {
	Pending     uint64 // in the stream, not delivered yet
	AckPending  uint64 // delivered, not acknowledged yet
	Redelivered uint64 // delivered more than once, not acknowledged yet
	GaveUp      uint64 // max-delivery advisories: messages it stopped retrying
}

// stepConsumers names the durable consumer that performs each step.
var stepConsumers = map[contracts.State]string{
	contracts.StateValidating: contracts.ConsumerValidator,
	contracts.StateMerging:    contracts.ConsumerMerger,
	contracts.StateNotifying:  contracts.ConsumerNotifier,
	contracts.StateIndexing:   contracts.ConsumerIndexer,
}

// Watchdog fails sagas stuck in a step (design §4): every interval it reads
// at most Batch stuck rows through the (state, updated_at) index and moves
// each to MERGE_FAILED by the projection's conditional update, publishing
// prsaga.merge.timed_out.v1 through the ledger's outbox. Several watchdogs
// may run over one database: a row moves once, because the move is
// conditional on the version the tick read and the timed_out id is derived
// from that version. Safe for concurrent use.
type Watchdog struct {
	Config WatchdogConfig
	Store  WatchdogStore
	Bus    BusProbe
	Proj   *Projector
	Log    *slog.Logger
	Now    func() time.Time // default time.Now
	// Metrics, when set, counts the sagas this watchdog timed out.
	Metrics Metrics

	mu      sync.Mutex
	skipped string // why the last tick was skipped; "" when it ran
}

// TickResult says what one tick did (printed as JSON by prsaga watchdog
// --once, design §7).
type TickResult struct {
	Skipped string     `json:"skipped,omitempty"` // non-empty: the tick did nothing, and why
	Stuck   int        `json:"examined"`          // rows found stuck
	Moved   int        `json:"timed_out"`         // rows this watchdog moved to MERGE_FAILED
	Rows    []TimedOut `json:"rows"`              // the stuck rows, in the order examined
}

// TimedOut is one stuck row a tick examined.
type TimedOut struct {
	PRID          string          `json:"pr_id"`
	CorrelationID string          `json:"correlation_id"`
	Step          contracts.State `json:"step"`
	Attempt       int             `json:"attempt"`
	Deadline      time.Time       `json:"deadline"`
	// Moved: this tick failed the saga; false when it moved since it was
	// read or another watchdog failed it first.
	Moved     bool   `json:"timed_out"`
	Diagnosis string `json:"diagnosis"`
}

// probeTimeout bounds each question to the bus or the store.
const probeTimeout = 2 * time.Second

// Run ticks every interval until ctx ends.
func (w *Watchdog) Run(ctx context.Context) {
	cfg := w.Config.WithDefaults()
	t := time.NewTicker(cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := w.Tick(ctx); err != nil && ctx.Err() == nil {
				w.Log.WarnContext(ctx, "watchdog tick failed", "err", err)
			}
		}
	}
}

// Tick runs one round. It is skipped while the bus or the store does not
// answer: an outage must not fail every saga at once.
func (w *Watchdog) Tick(ctx context.Context) (TickResult, error) {
	cfg := w.Config.WithDefaults()
	if why, err := w.unreachable(ctx); err != nil {
		if !errors.Is(err, ErrBusClosed) {
			w.noteSkip(ctx, why)
		}
		return TickResult{Skipped: why}, nil
	}
	now := w.now()
	rows, err := w.Store.Stuck(ctx, cfg.Timeouts.Cutoffs(now), cfg.Batch)
	if err != nil {
		why := "store unreachable: " + err.Error()
		w.noteSkip(ctx, why)
		return TickResult{Skipped: why}, nil
	}
	w.noteSkip(ctx, "")
	res := TickResult{Stuck: len(rows), Rows: []TimedOut{}}
	for _, row := range rows {
		to, err := w.timeOut(ctx, row, cfg.Timeouts.Of(row.State))
		if err != nil {
			return res, fmt.Errorf("time out %s: %w", row.PRID, err)
		}
		res.Rows = append(res.Rows, to)
		if to.Moved {
			res.Moved++
		}
	}
	return res, nil
}

func (w *Watchdog) unreachable(ctx context.Context) (string, error) {
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	if err := w.Bus.Ping(pctx); err != nil {
		return "bus unreachable: " + err.Error(), err
	}
	if err := w.Store.Ping(pctx); err != nil {
		return "store unreachable: " + err.Error(), err
	}
	return "", nil
}

// noteSkip logs a skipped tick once per outage, and the recovery.
func (w *Watchdog) noteSkip(ctx context.Context, why string) {
	w.mu.Lock()
	prev := w.skipped
	w.skipped = why
	w.mu.Unlock()
	switch {
	case why != "" && prev == "":
		w.Log.WarnContext(ctx, "watchdog ticks skipped", "reason", why)
	case why == "" && prev != "":
		w.Log.InfoContext(ctx, "watchdog ticks resumed", "after", prev)
	}
}

// errNotApplied rolls back a timeout that the state machine refused.
var errNotApplied = errors.New("timeout not applied")

// timeOut moves one stuck row, if it has not moved since it was read.
func (w *Watchdog) timeOut(ctx context.Context, row contracts.Row, timeout time.Duration) (TimedOut, error) {
	d := w.diagnose(ctx, row)
	to := TimedOut{PRID: row.PRID, CorrelationID: row.CorrelationID, Step: row.State, Attempt: row.Attempts,
		Deadline: row.UpdatedAt.Add(timeout).UTC(), Diagnosis: d.text}
	e, err := contracts.New(TimedOutID(row), contracts.TypeTimedOut, contracts.SourceLedger, row.PRID, w.now(),
		contracts.TimedOut{
			Request:     d.request,
			Step:        row.State,
			Deadline:    row.UpdatedAt.Add(timeout).UTC(),
			LastEventID: d.lastEventID,
			Diagnosis:   d.text,
		},
		contracts.Meta{CorrelationID: row.CorrelationID, CausationID: d.lastEventID, Attempt: row.Attempts,
			ClientRef: d.meta.ClientRef, TraceParent: d.meta.TraceParent, TraceState: d.meta.TraceState})
	if err != nil {
		return to, err
	}
	env, err := contracts.Open(e)
	if err != nil {
		return to, fmt.Errorf("open own timed_out: %w", err)
	}
	log := logging.ForEvent(w.Log, env)
	moved := false
	err = w.Store.Update(ctx, func(tx Tx) error {
		moved = false
		cur, err := tx.Saga(row.PRID)
		if err != nil {
			return err
		}
		if !cur.Exists || cur.Version != row.Version {
			return nil // it moved since the read, or another watchdog got it
		}
		res, err := w.Proj.Project(ctx, tx, env, log)
		if err != nil {
			return err
		}
		if res.Status != StatusApplied {
			return errNotApplied
		}
		moved = true
		// The ledger's own consumer will see this event again and find it
		// recorded: the projection above is the only one.
		return tx.Emit(e)
	})
	switch {
	case errors.Is(err, ErrConflict), errors.Is(err, errNotApplied):
		return to, nil
	case err != nil:
		return to, err
	}
	if moved {
		if w.Metrics != nil {
			w.Metrics.WatchdogTimeout(row.State)
		}
		log.WarnContext(ctx, "step timed out", "step", string(row.State), "deadline", row.UpdatedAt.Add(timeout).UTC(), "diagnosis", d.text)
	}
	to.Moved = moved
	return to, nil
}

// TimedOutID is the id of the timed_out event for a row at one version:
// watchdogs that read the same row produce the same event, which the
// projection, JetStream's dedupe and the consumers' inboxes all drop.
func TimedOutID(row contracts.Row) string {
	h := sha256.Sum256([]byte(row.PRID + "\x00" + row.CorrelationID + "\x00" + string(row.State) + "\x00" +
		strconv.Itoa(row.Attempts) + "\x00" + strconv.FormatInt(row.Version, 10)))
	return "to-" + hex.EncodeToString(h[:16])
}

func (w *Watchdog) now() time.Time {
	if w.Now == nil {
		return time.Now().UTC()
	}
	return w.Now().UTC()
}
