package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/logging"
)

// RetryRequest is an operator's retry of a failed saga (design §4).
type RetryRequest struct {
	PRID  string
	Actor string // who retries: the token's name, or "local"
	// Force retries a failure that its step marked not retryable.
	Force bool
	// DryRun decides and builds the replay but writes nothing.
	DryRun bool
	// IdempotencyKey, when set, makes a repeated call return the first
	// answer given under it.
	IdempotencyKey string
}

// RetryAnswer is the outcome of a retry; the first one given under an
// Idempotency-Key is stored and given again.
type RetryAnswer struct {
	PRID     string `json:"pr_id"`
	Accepted bool   `json:"accepted"`
	// Refused says why the retry was refused ("" when accepted): the saga
	// is not MERGE_FAILED, another retry won, the failure needs force, or
	// there is nothing to replay.
	Refused string `json:"refused,omitempty"`
	// NeedsForce: refused only because the failure is marked not
	// retryable; the same retry with Force is allowed.
	NeedsForce bool    `json:"needs_force,omitempty"`
	DryRun     bool    `json:"dry_run,omitempty"`
	Replay     *Replay `json:"replay,omitempty"`
	// Repeated: this is the stored answer of an earlier call with the same
	// Idempotency-Key.
	Repeated bool `json:"-"`
	// NotFailed: refused because the saga is not MERGE_FAILED (any more).
	NotFailed bool `json:"-"`
}

// Replay is the trigger event a retry puts into the outbox.
type Replay struct {
	EventID       string          `json:"event_id"`
	EventType     string          `json:"event_type"`
	ReplayOf      string          `json:"replay_of"`
	CorrelationID string          `json:"correlation_id"`
	Step          contracts.State `json:"step"`
	Attempt       int             `json:"attempt"`
	Actor         string          `json:"actor"`
	// Event is the replayed CloudEvent in structured JSON form.
	Event json.RawMessage `json:"event"`
}

// ErrKeyReused: an Idempotency-Key already answered a retry of another PR.
var ErrKeyReused = errors.New("idempotency key already used for another saga")

// refusal is a retry the state of the saga does not allow: answered 409.
type refusal struct {
	msg        string
	needsForce bool
	notFailed  bool // the saga is not (or no longer) MERGE_FAILED
}

func (r refusal) Error() string { return r.msg }

func refuse(format string, args ...any) error { return refusal{msg: fmt.Sprintf(format, args...)} }

// Updater runs a closure in one write transaction of the ledger's store.
type Updater interface {
	Update(ctx context.Context, fn func(tx Tx) error) error
}

// Retrier performs operators' retries: each in one transaction that moves
// MERGE_FAILED back to the failed step and puts the step's trigger, replayed,
// into the outbox. Safe for concurrent use.
type Retrier struct {
	Store Updater
	Proj  *Projector
	NewID func() string // ids of replayed events
	Log   *slog.Logger
}

var errDryRun = errors.New("dry run: roll back")

// Retry retries the saga of req.PRID. A refusal is an answer (Accepted
// false, Refused set), not an error; errors are ErrNotFound, ErrKeyReused,
// ErrInvalid for a bad PR id, and the store's.
func (r *Retrier) Retry(ctx context.Context, req RetryRequest) (RetryAnswer, error) {
	if _, _, err := contracts.ParsePRID(req.PRID); err != nil {
		return RetryAnswer{}, err
	}
	id := r.NewID() // outside the closure, which may run more than once
	var ans RetryAnswer
	err := r.Store.Update(ctx, func(tx Tx) error {
		ans = RetryAnswer{PRID: req.PRID, DryRun: req.DryRun}
		if req.IdempotencyKey != "" && !req.DryRun {
			prev, found, err := tx.RetryAnswer(req.IdempotencyKey)
			if err != nil {
				return err
			}
			if found {
				if prev.PRID != req.PRID {
					return fmt.Errorf("%w (%s)", ErrKeyReused, prev.PRID)
				}
				ans, ans.Repeated = prev, true
				return nil
			}
		}
		replay, err := r.Proj.retry(ctx, tx, req, id, r.Log)
		var rf refusal
		switch {
		case errors.As(err, &rf):
			ans.Refused, ans.NeedsForce, ans.NotFailed = rf.msg, rf.needsForce, rf.notFailed
		case err != nil:
			return err
		default:
			ans.Accepted, ans.Replay = true, &replay
		}
		if req.DryRun {
			return errDryRun
		}
		if req.IdempotencyKey != "" {
			return tx.SaveRetryAnswer(req.IdempotencyKey, ans)
		}
		return nil
	})
	switch {
	case errors.Is(err, errDryRun):
		return ans, nil
	case errors.Is(err, ErrConflict):
		// Another writer moved the row between read and write (possible on
		// stores whose transactions are not serialised like SQLite's).
		return RetryAnswer{PRID: req.PRID, Refused: "another retry or event changed the saga first: reload and look again"}, nil
	case err != nil:
		return RetryAnswer{}, err
	}
	return ans, nil
}

// retry decides one retry within tx: contracts.Retry rules on the row, the
// trigger of the failed step is the latest one of this run in saga_event.
func (p *Projector) retry(ctx context.Context, tx Tx, req RetryRequest, id string, log *slog.Logger) (Replay, error) {
	row, err := tx.Saga(req.PRID)
	if err != nil {
		return Replay{}, err
	}
	if !row.Exists {
		return Replay{}, fmt.Errorf("%s: %w", req.PRID, ErrNotFound)
	}
	d, err := contracts.Retry(row)
	if err != nil {
		return Replay{}, refusal{msg: err.Error(), notFailed: true}
	}
	step := row.FailedStep
	if !row.TimedOut && !req.Force {
		if err := needsForce(tx, row); err != nil {
			return Replay{}, err
		}
	}
	trig, found, err := tx.LatestEvent(row.CorrelationID, contracts.TriggerType(step))
	if err != nil {
		return Replay{}, err
	}
	if !found {
		return Replay{}, refuse("no %s event of run %s is recorded: nothing to replay for %s", contracts.TriggerType(step), row.CorrelationID, step)
	}
	orig, err := trig.CloudEvent()
	if err != nil {
		return Replay{}, err
	}
	oenv, err := contracts.Open(orig)
	if err != nil {
		return Replay{}, fmt.Errorf("recorded trigger %s: %w", trig.EventID, err)
	}
	replayOf := orig.ID()
	if oenv.Meta.ReplayOf != "" {
		replayOf = oenv.Meta.ReplayOf // a replay of a replay names the original
	}
	now := p.now()
	next := d.Row
	next.UpdatedAt = now
	e, err := contracts.New(id, orig.Type(), contracts.SourceLedger, row.PRID, now, json.RawMessage(orig.Data()), contracts.Meta{
		CorrelationID: row.CorrelationID,
		CausationID:   oenv.Meta.CausationID,
		Attempt:       next.Attempts,
		ReplayOf:      replayOf,
		ClientRef:     oenv.Meta.ClientRef,
		TraceParent:   oenv.Meta.TraceParent,
		TraceState:    oenv.Meta.TraceState,
	})
	if err != nil {
		return Replay{}, fmt.Errorf("build replay of %s: %w", replayOf, err)
	}
	env, err := contracts.Open(e)
	if err != nil {
		return Replay{}, fmt.Errorf("open replay of %s: %w", replayOf, err)
	}
	if err := tx.SaveSaga(row, next); err != nil {
		return Replay{}, err
	}
	next.Version = row.Version + 1
	ts, err := tx.AddTransitions(row.PRID, []Transition{{
		CorrelationID: row.CorrelationID,
		From:          contracts.StateMergeFailed,
		To:            step,
		Reason:        fmt.Sprintf("%s by %s: replays %s", d.Transitions[0].Reason, req.Actor, replayOf),
		EventID:       e.ID(),
		Actor:         req.Actor,
		At:            now,
	}})
	if err != nil {
		return Replay{}, err
	}
	if err := announce(tx, env, next, ts, now); err != nil {
		return Replay{}, err
	}
	observe(tx, p.Metrics, env, row, next, ts, now)
	if err := tx.Emit(e); err != nil {
		return Replay{}, err
	}
	if log != nil {
		logTransitions(ctx, tx, logging.ForEvent(log, env).With("actor", req.Actor), next, ts)
	}
	raw, err := json.Marshal(e)
	if err != nil {
		return Replay{}, fmt.Errorf("encode replay: %w", err)
	}
	return Replay{EventID: e.ID(), EventType: e.Type(), ReplayOf: replayOf, CorrelationID: row.CorrelationID,
		Step: step, Attempt: next.Attempts, Actor: req.Actor, Event: raw}, nil
}

// needsForce refuses a retry of a failure that its step marked not
// retryable (a timeout is always retryable: the step may just be slow).
func needsForce(tx Tx, row contracts.Row) error {
	f, found, err := tx.LatestEvent(row.CorrelationID, contracts.TypeStepFailed)
	if err != nil || !found {
		return err
	}
	ce, err := f.CloudEvent()
	if err != nil {
		return err
	}
	var sf contracts.StepFailed
	if err := contracts.Decode(ce, &sf); err != nil {
		return err
	}
	if sf.Step == row.FailedStep && !sf.Retryable {
		return refusal{needsForce: true, msg: fmt.Sprintf("the failure at %s (%s) is marked not retryable: fix its cause, then retry with force=true", sf.Step, sf.Code)}
	}
	return nil
}
