package runner

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/backoff"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/fault"
	"github.com/prsaga/prsaga/platform/step"
	"github.com/prsaga/prsaga/platform/store"
)

// open decodes and checks a message, dead-lettering what cannot be read
// or attributed; nil means the message is settled.
func (r *Runner) open(ctx context.Context, m jetstream.Msg) *unit {
	env, err := bus.Open(m.Subject(), m.Headers(), m.Data())
	if err == nil {
		err = bus.CheckPayload(env)
	}
	if err != nil {
		r.deadLetter(ctx, m, err.Error())
		return nil
	}
	u := &unit{m: m, env: env}
	r.observe(ctx, u)
	if md, err := m.Metadata(); err == nil {
		u.ctx = step.WithStoredAt(u.ctx, md.Timestamp)
	}
	u.log = eventLog(r.cfg.Log, u.env)
	return u
}

// run runs the unit's side effect — or, on the last allowed delivery of a
// step consumer, prepares step_failed(retries_exhausted) instead — and
// reports whether the unit is ready to commit (false: retried). The units
// of the batch that wait for it are kept in progress meanwhile too.
func (r *Runner) run(ctx context.Context, u *unit, waiting []*unit) bool {
	var err error
	if r.lastDelivery(u.m) {
		u.commit, err = r.exhausted(u.env)
		u.gaveUp = true
		u.log.WarnContext(ctx, "delivery budget exhausted; step failed", "step", r.cfg.Step)
	} else {
		ms := make([]jetstream.Msg, 0, len(waiting)+1)
		for _, w := range waiting {
			ms = append(ms, w.m)
		}
		stop := r.inProgress(append(ms, u.m)...)
		u.commit, err = r.cfg.Handle(u.ctx, u.env, u.log)
		stop()
	}
	if err == nil {
		err = r.fault(FaultAfterEffect, u.env)
	}
	if err != nil {
		r.retry(ctx, u.m, u.log, err)
		u.finish(OutcomeRetry, err)
		return false
	}
	return true
}

// inProgress tells JetStream the messages are in progress every
// AckWait/2 until stop is called, so that a long side effect is not
// redelivered meanwhile.
func (r *Runner) inProgress(ms ...jetstream.Msg) (stop func()) {
	every := r.cfg.Bus.Config().AckWait / 2
	var mu sync.Mutex // guards done and t
	done := false
	var t *time.Timer
	mu.Lock()
	t = time.AfterFunc(every, func() {
		mu.Lock()
		defer mu.Unlock()
		if !done {
			for _, m := range ms {
				_ = m.InProgress()
			}
			t.Reset(every)
		}
	})
	mu.Unlock()
	return func() {
		mu.Lock()
		done = true
		mu.Unlock()
		t.Stop()
	}
}

func (r *Runner) lastDelivery(m jetstream.Msg) bool {
	if !r.cfg.Consumer.GiveUp || r.cfg.Step == "" {
		return false
	}
	md, err := m.Metadata()
	return err == nil && int(md.NumDelivered) >= r.cfg.Bus.Config().MaxDeliver
}

func (r *Runner) exhausted(env contracts.Envelope) (step.Commit, error) {
	max := r.cfg.Bus.Config().MaxDeliver
	f := contracts.StepFailed{
		Request:   env.Req(),
		Step:      r.cfg.Step,
		Code:      contracts.CodeRetriesExhausted,
		Reason:    fmt.Sprintf("%s gave up after %d deliveries of %s", r.cfg.Service, max, env.Event.ID()),
		Retryable: true,
	}
	out, err := contracts.Follow(env.Event, step.FollowID(r.cfg.Service, env), contracts.TypeStepFailed, r.cfg.Service, r.cfg.Now(), f)
	if err != nil {
		return nil, err
	}
	return func(tx store.Tx) error { return tx.Emit(out) }, nil
}

// fault is a fault point of the runner: this consumer's named point in
// package fault (PRSAGA_FAULTS), then Config.Fault. An error aborts
// handling there.
func (r *Runner) fault(point string, env contracts.Envelope) error {
	name := r.afterEffect
	if point == FaultAfterCommit {
		name = r.afterCommit
	}
	if err := fault.Hit(name); err != nil {
		return err
	}
	if r.cfg.Fault != nil {
		return r.cfg.Fault(point, env)
	}
	return nil
}

// retry Naks m with the backoff of its delivery number, jittered (so that
// messages failing together come back spread out); a configured delay is
// never exceeded.
func (r *Runner) retry(ctx context.Context, m jetstream.Msg, log *slog.Logger, err error) {
	delay := r.cfg.Backoff[len(r.cfg.Backoff)-1]
	if md, merr := m.Metadata(); merr == nil && md.NumDelivered >= 1 && int(md.NumDelivered) <= len(r.cfg.Backoff) {
		delay = r.cfg.Backoff[md.NumDelivered-1]
	}
	delay = backoff.Jitter(delay)
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
	log := r.cfg.Log.With(append(msgIDs(m), "subject", m.Subject(), "reason", reason)...)
	msg := natsMsg(m)
	if err := r.cfg.Bus.DeadLetter(ctx, r.cfg.Consumer.Durable, msg, reason); err != nil {
		r.retry(ctx, m, log, fmt.Errorf("dead-letter: %w", err))
		return
	}
	if r.cfg.Telemetry != nil {
		r.cfg.Telemetry.DeadLettered(r.cfg.Consumer.Durable)
	}
	log.WarnContext(ctx, "message dead-lettered", "dlq_subject", contracts.DLQSubject(r.cfg.Consumer.Durable))
	r.ack(ctx, m, log)
}
