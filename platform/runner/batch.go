package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/step"
	"github.com/prsaga/prsaga/platform/store"
)

// unit is one message whose side effect is done, waiting to be committed.
type unit struct {
	m      jetstream.Msg
	env    contracts.Envelope
	log    *slog.Logger
	commit step.Commit
	// ctx is the context of its handling (with its span), end the end of
	// its telemetry (see finish), gaveUp whether it is the last delivery's
	// step_failed.
	ctx    context.Context
	end    func(outcome string, err error)
	gaveUp bool
}

// handleBatch handles d and whatever else is already waiting (up to Batch
// messages, within BatchWindow), then commits their units in one
// transaction and acks them — in delivery order. A message that must wait
// for an earlier copy of its event id (see delivery) ends the batch: it is
// returned, to be handled once the batch is committed.
func (r *Runner) handleBatch(ctx context.Context, d *delivery) (next *delivery) {
	r.await(ctx, d)
	taken := []*delivery{d}
	defer func() {
		for _, d := range taken {
			r.release(d)
		}
	}()
	if r.cfg.HandleBatch != nil {
		return r.handleAll(ctx, &taken)
	}
	start := time.Now()
	var units []*unit
	add := func(d *delivery) {
		u := r.open(ctx, d.m)
		if u == nil || r.skip(ctx, u) {
			return
		}
		if !r.cfg.InCommitOnly {
			seen, err := r.processed(ctx, d, u.env.Event.ID())
			if r.settleSeen(ctx, u, seen, err) {
				return
			}
		}
		if r.run(ctx, u, units) {
			units = append(units, u)
		}
	}
	add(d)
	// Messages are taken one at a time, so that idle workers share a queue
	// of slow side effects instead of one worker running them in a row.
	for n := 1; n < r.cfg.Batch && time.Since(start) < r.cfg.BatchWindow; n++ {
		select {
		case d := <-r.work:
			if d.blocked() {
				next = d
				break
			}
			taken = append(taken, d)
			add(d)
			continue
		case <-r.quit:
		default:
		}
		break
	}
	if len(units) > 0 {
		r.commit(ctx, units)
	}
	return next
}

// lingerHook, when set (by a test), is called each time a worker starts
// waiting for more of its batch.
var lingerHook atomic.Pointer[func()]

// more returns a delivery already waiting, else, until *linger fires (it
// is then set to nil), the next to arrive; nil when there is none or the
// runner stops.
func (r *Runner) more(linger **time.Timer) *delivery {
	select {
	case d := <-r.work:
		return d
	default:
	}
	if *linger == nil {
		return nil
	}
	if hook := lingerHook.Load(); hook != nil {
		(*hook)()
	}
	select {
	case d := <-r.work:
		return d
	case <-(*linger).C:
		*linger = nil
	case <-r.quit:
	}
	return nil
}

// handleAll takes the message taken and everything already waiting (up
// to Batch), looks them up in the inbox at once and hands the rest to
// HandleBatch in one call. Like handleBatch it returns a message that
// must wait for an earlier copy of its id; taken gets every other.
func (r *Runner) handleAll(ctx context.Context, taken *[]*delivery) (next *delivery) {
	msgs := []jetstream.Msg{(*taken)[0].m}
	var linger *time.Timer
	if r.cfg.BatchLinger > 0 {
		linger = time.NewTimer(r.cfg.BatchLinger)
		defer linger.Stop()
	}
	for len(msgs) < r.cfg.Batch && next == nil {
		d := r.more(&linger)
		if d == nil {
			break
		}
		if d.blocked() {
			next = d
			break
		}
		*taken = append(*taken, d)
		msgs = append(msgs, d.m)
	}
	var units []*unit
	for _, m := range msgs {
		if u := r.open(ctx, m); u != nil && !r.skip(ctx, u) {
			units = append(units, u)
		}
	}
	units = r.dropSeen(ctx, units)
	var todo, done []*unit
	for _, u := range units {
		if r.lastDelivery(u.m) {
			if r.run(ctx, u, nil) { // the exhausted path: no handler
				done = append(done, u)
			}
			continue
		}
		todo = append(todo, u)
	}
	if len(todo) > 0 {
		envs := make([]contracts.Envelope, len(todo))
		logs := make([]*slog.Logger, len(todo))
		msgs := make([]jetstream.Msg, len(todo))
		for i, u := range todo {
			envs[i], logs[i], msgs[i] = u.env, u.log, u.m
		}
		stop := r.inProgress(msgs...)
		commits, errs := r.cfg.HandleBatch(ctx, envs, logs)
		stop()
		for i, u := range todo {
			var err error
			switch {
			case i >= len(commits) || i >= len(errs):
				err = fmt.Errorf("batch handler answered %d commits and %d errors for %d events", len(commits), len(errs), len(todo))
			case errs[i] != nil:
				err = errs[i]
			default:
				u.commit = commits[i]
			}
			if err == nil {
				err = r.fault(FaultAfterEffect, u.env)
			}
			if err != nil {
				r.retry(ctx, u.m, u.log, err)
				u.finish(OutcomeRetry, err)
				continue
			}
			done = append(done, u)
		}
	}
	if len(done) > 0 {
		r.commit(ctx, done)
	}
	return next
}

// skip acks u if the consumer has no use for its event (Config.Skip).
func (r *Runner) skip(ctx context.Context, u *unit) bool {
	if r.cfg.Skip == nil || !r.cfg.Skip(u.env) {
		return false
	}
	r.ack(ctx, u.m, u.log)
	u.finish(OutcomeSkipped, nil)
	return true
}

// dropSeen settles (acks) the units the inbox already holds and returns
// the others: one query when the store can, else one per unit.
func (r *Runner) dropSeen(ctx context.Context, units []*unit) []*unit {
	if r.cfg.InCommitOnly {
		return units // the commit's inbox insert drops them
	}
	ir, ok := r.cfg.Store.(InboxReader)
	if !ok || len(units) < 2 {
		out := units[:0]
		for _, u := range units {
			seen, err := r.cfg.Store.Processed(ctx, r.cfg.Consumer.Durable, u.env.Event.ID())
			if !r.settleSeen(ctx, u, seen, err) {
				out = append(out, u)
			}
		}
		return out
	}
	ids := make([]string, len(units))
	for i, u := range units {
		ids[i] = u.env.Event.ID()
	}
	seen, err := ir.ProcessedAny(ctx, r.cfg.Consumer.Durable, ids)
	out := units[:0]
	for _, u := range units {
		if !r.settleSeen(ctx, u, seen[u.env.Event.ID()], err) {
			out = append(out, u)
		}
	}
	return out
}

// settleSeen settles a unit whose inbox lookup failed (retry) or found it
// (ack); it reports whether it did.
func (r *Runner) settleSeen(ctx context.Context, u *unit, seen bool, err error) bool {
	switch {
	case err != nil:
		r.retry(ctx, u.m, u.log, err)
		u.finish(OutcomeRetry, err)
		return true
	case seen:
		u.log.DebugContext(ctx, "duplicate delivery dropped")
		r.ack(ctx, u.m, u.log)
		u.finish(OutcomeDuplicate, nil)
		return true
	}
	return false
}

// fn is the unit's part of the transaction: its inbox row, then its commit.
func (r *Runner) fn(u *unit) func(tx store.Tx) error {
	return func(tx store.Tx) error {
		first, err := tx.MarkProcessed(r.cfg.Consumer.Durable, u.env.Event.ID())
		if err != nil {
			return err
		}
		if !first {
			return errDuplicate
		}
		if u.commit == nil {
			return nil
		}
		return u.commit(tx)
	}
}

// commit commits the units — one transaction, each outcome its own, when
// the store can (BatchStore) — and settles each message by its own outcome.
func (r *Runner) commit(ctx context.Context, units []*unit) {
	// The commit can wait for the database's write lock up to its busy
	// timeout, as long as AckWait or longer: without this JetStream would
	// redeliver a unit whose commit is only slow, and the copy — on another
	// instance, free to commit first — would report the step's effect as
	// an earlier run's (already_merged for the merge this run made).
	ms := make([]jetstream.Msg, len(units))
	for i, u := range units {
		ms[i] = u.m
	}
	stop := r.inProgress(ms...)
	errs := make([]error, len(units))
	bs, batched := r.cfg.Store.(BatchStore)
	if batched && len(units) > 1 {
		fns := make([]func(tx store.Tx) error, len(units))
		for i, u := range units {
			fns[i] = r.fn(u)
		}
		each, err := bs.UpdateEach(ctx, fns)
		for i := range units {
			if err != nil {
				errs[i] = err
			} else {
				errs[i] = each[i]
			}
		}
	} else {
		for i, u := range units {
			errs[i] = r.cfg.Store.Update(ctx, r.fn(u))
		}
	}
	stop()
	for i, u := range units {
		r.settle(ctx, u, errs[i])
	}
}

// settle acks or retries one committed (or failed) unit.
func (r *Runner) settle(ctx context.Context, u *unit, err error) {
	if errors.Is(err, errDuplicate) {
		u.log.DebugContext(ctx, "duplicate delivery dropped at commit")
		r.ack(ctx, u.m, u.log)
		u.finish(OutcomeDuplicate, nil)
		return
	}
	if err != nil {
		err = fmt.Errorf("commit: %w", err)
		r.retry(ctx, u.m, u.log, err)
		u.finish(OutcomeRetry, err)
		return
	}
	if err := r.fault(FaultAfterCommit, u.env); err != nil {
		u.finish(OutcomeCrashed, err)
		return // as if the process died: redelivered after AckWait
	}
	r.ack(ctx, u.m, u.log)
	if u.gaveUp {
		u.finish(OutcomeGaveUp, nil)
	} else {
		u.finish(OutcomeAcked, nil)
	}
}
