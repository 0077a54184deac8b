// Package runner is the one consume → transaction → ack loop every service
// uses (DESIGN §5): inbox check, the step's side effect outside any
// transaction, one transaction {inbox, own state, outbox}, ack. A service
// supplies only its Handler.
package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/logging"
	"github.com/prsaga/prsaga/platform/sqlite"
)

// Commit is the part of handling that runs inside the transaction: the
// service's own state changes and its outgoing events (tx.Emit). It may run
// more than once and must have no side effects outside tx.
type Commit func(tx *sqlite.Tx) error

// Handler handles one event. It runs the step's side effect — idempotently,
// checking the world first, since a crash may repeat it — and returns the
// Commit. An error means "try again later": the message is Nak'ed with
// backoff and redelivered.
type Handler func(ctx context.Context, env contracts.Envelope, log *slog.Logger) (Commit, error)

// Store is what the runner needs of a service's database.
type Store interface {
	Processed(ctx context.Context, consumer, eventID string) (bool, error)
	Update(ctx context.Context, fn func(tx *sqlite.Tx) error) error
}

// Config of one consumer loop.
type Config struct {
	Service  string // e.g. "merger": source of the events it emits
	Consumer bus.ConsumerSpec
	Bus      *bus.Bus
	Store    Store
	Handle   Handler
	Log      *slog.Logger
	// Step is the saga step this consumer performs. With Consumer.GiveUp, the
	// last allowed delivery skips the handler and emits
	// step_failed(Step, retries_exhausted).
	Step contracts.State
	// Backoff lists Nak delays by delivery number (the last repeats).
	Backoff []time.Duration
	// Workers handling messages concurrently; default 4.
	Workers int
	// Fault, when set, is called at named points (see Fault* constants); an
	// error it returns aborts handling there, as a crash would. Tests only.
	Fault func(point string, env contracts.Envelope) error
	Now   func() time.Time
}

// Fault points of the runner.
const (
	FaultAfterEffect = "runner.after-effect" // side effect done, nothing committed
	FaultAfterCommit = "runner.after-commit" // committed, not acked
)

// Runner consumes one durable consumer until stopped.
type Runner struct {
	cfg  Config
	cc   jetstream.ConsumeContext
	work chan jetstream.Msg
	// quit is closed by Stop: the intake hands over no more messages and
	// idle workers exit. work itself is never closed, because the consume
	// callback may still be running when Stop gets past cc.Closed().
	quit     chan struct{}
	wg       sync.WaitGroup
	stop     context.CancelFunc
	stopOnce sync.Once
}

var errDuplicate = errors.New("duplicate delivery")

// Start creates the durable consumer and starts consuming.
func Start(ctx context.Context, cfg Config) (*Runner, error) {
	if cfg.Workers <= 0 {
		cfg.Workers = 4
	}
	if len(cfg.Backoff) == 0 {
		cfg.Backoff = []time.Duration{time.Second, 5 * time.Second, 30 * time.Second}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.Log = cfg.Log.With("consumer", cfg.Consumer.Durable)
	c, err := cfg.Bus.Consumer(ctx, cfg.Consumer)
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r := &Runner{cfg: cfg, work: make(chan jetstream.Msg), quit: make(chan struct{}), stop: cancel}
	for i := 0; i < cfg.Workers; i++ {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			for {
				select {
				case m := <-r.work:
					r.handle(rctx, m)
				case <-r.quit:
					return
				}
			}
		}()
	}
	r.cc, err = c.Consume(func(m jetstream.Msg) {
		select {
		case r.work <- m:
		case <-r.quit:
			// Not handled: redelivered after AckWait, to this or another instance.
		}
	}, jetstream.PullMaxMessages(2*cfg.Workers), jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		if !errors.Is(err, jetstream.ErrNoHeartbeat) {
			cfg.Log.Debug("consume", "err", err)
		}
	}))
	if err != nil {
		close(r.quit)
		r.wg.Wait()
		cancel()
		return nil, fmt.Errorf("consume %s: %w", cfg.Consumer.Durable, err)
	}
	return r, nil
}

// Stop stops consuming, lets handlers in progress finish (with their
// context intact, so that a side effect already done gets committed), and
// returns. Messages fetched but not yet handled are redelivered after
// AckWait. Safe to call more than once.
func (r *Runner) Stop() {
	r.stopOnce.Do(func() {
		r.cc.Stop()
		<-r.cc.Closed()
		close(r.quit)
		r.wg.Wait()
		r.stop()
	})
}

func (r *Runner) handle(ctx context.Context, m jetstream.Msg) {
	log := r.cfg.Log
	e, err := bus.Decode(m.Headers(), m.Data())
	if err != nil {
		r.deadLetter(ctx, m, err.Error())
		return
	}
	env, err := contracts.Open(e)
	if err == nil && e.Type() != contracts.TypeMergeRequested {
		// An invalid requested event is answered by the validator
		// (invalid_request); any other invalid event has nobody to answer.
		err = env.ValidatePayload()
	}
	if err != nil {
		r.deadLetter(ctx, m, err.Error())
		return
	}
	log = logging.ForEvent(log, env)
	seen, err := r.cfg.Store.Processed(ctx, r.cfg.Consumer.Durable, e.ID())
	if err != nil {
		r.retry(ctx, m, log, err)
		return
	}
	if seen {
		log.DebugContext(ctx, "duplicate delivery dropped")
		r.ack(ctx, m, log)
		return
	}
	var commit Commit
	if r.lastDelivery(m) {
		commit, err = r.exhausted(env)
		log.WarnContext(ctx, "delivery budget exhausted; step failed", "step", r.cfg.Step)
	} else {
		commit, err = r.effect(ctx, m, env, log)
	}
	if err == nil && r.cfg.Fault != nil {
		err = r.cfg.Fault(FaultAfterEffect, env)
	}
	if err != nil {
		r.retry(ctx, m, log, err)
		return
	}
	err = r.cfg.Store.Update(ctx, func(tx *sqlite.Tx) error {
		first, err := tx.MarkProcessed(r.cfg.Consumer.Durable, e.ID())
		if err != nil {
			return err
		}
		if !first {
			return errDuplicate
		}
		if commit == nil {
			return nil
		}
		return commit(tx)
	})
	if errors.Is(err, errDuplicate) {
		log.DebugContext(ctx, "duplicate delivery dropped at commit")
		r.ack(ctx, m, log)
		return
	}
	if err != nil {
		r.retry(ctx, m, log, fmt.Errorf("commit: %w", err))
		return
	}
	if r.cfg.Fault != nil {
		if err := r.cfg.Fault(FaultAfterCommit, env); err != nil {
			return // as if the process died: redelivered after AckWait
		}
	}
	r.ack(ctx, m, log)
}

// effect runs the handler, telling JetStream the message is in progress
// every AckWait/2 so that a long side effect is not redelivered meanwhile.
func (r *Runner) effect(ctx context.Context, m jetstream.Msg, env contracts.Envelope, log *slog.Logger) (Commit, error) {
	done := make(chan struct{})
	defer close(done)
	go func() {
		t := time.NewTicker(r.cfg.Bus.Config().AckWait / 2)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				_ = m.InProgress()
			}
		}
	}()
	return r.cfg.Handle(ctx, env, log)
}

func (r *Runner) lastDelivery(m jetstream.Msg) bool {
	if !r.cfg.Consumer.GiveUp || r.cfg.Step == "" {
		return false
	}
	md, err := m.Metadata()
	return err == nil && int(md.NumDelivered) >= r.cfg.Bus.Config().MaxDeliver
}

func (r *Runner) exhausted(env contracts.Envelope) (Commit, error) {
	max := r.cfg.Bus.Config().MaxDeliver
	f := contracts.StepFailed{
		Request:   env.Req(),
		Step:      r.cfg.Step,
		Code:      contracts.CodeRetriesExhausted,
		Reason:    fmt.Sprintf("%s gave up after %d deliveries of %s", r.cfg.Service, max, env.Event.ID()),
		Retryable: true,
	}
	out, err := contracts.Follow(env.Event, NewID(), contracts.TypeStepFailed, r.cfg.Service, r.cfg.Now(), f)
	if err != nil {
		return nil, err
	}
	return func(tx *sqlite.Tx) error { return tx.Emit(out) }, nil
}

func (r *Runner) retry(ctx context.Context, m jetstream.Msg, log *slog.Logger, err error) {
	delay := r.cfg.Backoff[len(r.cfg.Backoff)-1]
	if md, merr := m.Metadata(); merr == nil && int(md.NumDelivered) <= len(r.cfg.Backoff) {
		delay = r.cfg.Backoff[md.NumDelivered-1]
	}
	log.WarnContext(ctx, "handling failed; will retry", "err", err, "retry_in", delay.String())
	if nerr := m.NakWithDelay(delay); nerr != nil {
		log.WarnContext(ctx, "nak failed; redelivery after ack wait", "err", nerr)
	}
}

func (r *Runner) ack(ctx context.Context, m jetstream.Msg, log *slog.Logger) {
	if err := m.Ack(); err != nil {
		log.WarnContext(ctx, "ack failed; the inbox will drop the redelivery", "err", err)
	}
}

func (r *Runner) deadLetter(ctx context.Context, m jetstream.Msg, reason string) {
	log := r.cfg.Log.With("subject", m.Subject(), "reason", reason)
	msg := natsMsg(m)
	if err := r.cfg.Bus.DeadLetter(ctx, r.cfg.Consumer.Durable, msg, reason); err != nil {
		r.retry(ctx, m, log, fmt.Errorf("dead-letter: %w", err))
		return
	}
	log.WarnContext(ctx, "message dead-lettered", "dlq_subject", contracts.DLQSubject(r.cfg.Consumer.Durable))
	r.ack(ctx, m, log)
}

// NewID returns a new event id (UUIDv7: time-ordered, so ids sort by creation).
func NewID() string { return uuid.Must(uuid.NewV7()).String() }
