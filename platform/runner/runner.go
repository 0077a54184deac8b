// Package runner is the one consume → transaction → ack loop every service
// uses (design §5): inbox check, the step's side effect outside any
// transaction, one transaction {inbox, own state, outbox}, ack. A service
// supplies only its step.Handler (or a step.BatchHandler).
//
// Under load a worker commits the messages already waiting for it together
// (Config.Batch, BatchWindow): one transaction in which each outcome stays
// its own — a message whose commit fails is rolled back alone and retried,
// the others commit and are acked (platform/sqlite runs the messages
// without savepoints first, and once more with a savepoint each when one
// of them fails).
// Messages are acked only after their commit; with one worker they are
// handled, committed and acked in delivery order.
package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/fault"
	"github.com/prsaga/prsaga/platform/step"
	"github.com/prsaga/prsaga/platform/store"
)

// Store is what the runner needs of a service's database.
type Store interface {
	Processed(ctx context.Context, consumer, eventID string) (bool, error)
	Update(ctx context.Context, fn func(tx store.Tx) error) error
}

// InboxReader is a Store that looks several events up in one query.
type InboxReader interface {
	ProcessedAny(ctx context.Context, consumer string, eventIDs []string) (map[string]bool, error)
}

// BatchStore is a Store that commits several units in one transaction,
// each as if in its own savepoint (sqlite.DB.UpdateEach): errs[i] is unit i's
// own failure (rolled back alone), err a failure of the whole (nothing
// committed). A Store without it gets one transaction per message.
type BatchStore interface {
	Store
	UpdateEach(ctx context.Context, fns []func(tx store.Tx) error) (errs []error, err error)
}

// Config of one consumer loop.
type Config struct {
	Service  string // e.g. "merger": source of the events it emits
	Consumer bus.ConsumerSpec
	Bus      *bus.Bus
	Store    Store
	Handle   step.Handler
	// HandleBatch, when set, is used instead of Handle: each batch of
	// messages (up to Batch, what is already delivered) goes to one call.
	HandleBatch step.BatchHandler
	Log         *slog.Logger
	// Step is the saga step this consumer performs. With Consumer.GiveUp, the
	// last allowed delivery skips the handler and emits
	// step_failed(Step, retries_exhausted).
	Step contracts.State
	// Backoff lists Nak delays by delivery number (the last repeats).
	Backoff []time.Duration
	// Workers handling messages concurrently; default 4. The first always
	// takes messages; the others only while a worker's batch has run for
	// HelpAfter (a slow side effect), one more per such batch, so that
	// fast steps batch in one worker (fewer, larger transactions) and slow
	// ones still run side by side. With one worker messages are handled,
	// committed and acked in delivery order.
	Workers int
	// HelpAfter is how long a batch runs before another worker starts
	// taking messages; default 10ms; negative: every worker takes messages
	// at once.
	HelpAfter time.Duration
	// Batch bounds the messages a worker commits in one transaction, each
	// outcome its own (a failing one is rolled back and retried alone).
	// Default 64; 1 commits every message alone. Only what is already
	// delivered is batched: a worker never waits for more messages (but
	// see BatchLinger).
	Batch int
	// Skip, when set, names the events this consumer has no use for: they
	// are acknowledged as they come, with no handler, no inbox row and no
	// transaction. Only for events that change nothing whenever they are
	// handled (a redelivery is skipped again).
	Skip func(env contracts.Envelope) bool
	// InCommitOnly says the handler has no effect outside its commit (design
	// §5: step 2 is empty — a projection, a lock): the inbox is then checked
	// only by the commit's inbox insert, which drops a duplicate all the
	// same (the handler's work is rolled back with it, and nothing else was
	// done), instead of by a read before the handler as well — one query per
	// message or batch fewer.
	InCommitOnly bool
	// BatchLinger, for HandleBatch only, is how long a worker waits for
	// more messages when fewer than Batch are waiting, before it hands the
	// batch over: for a side effect with a large cost per call (a search
	// index write persists a file per call), so that a call serves more
	// messages. Zero, the default, never waits. The messages taken keep
	// their AckWait running meanwhile; a copy of one of them that another
	// worker holds waits at most this long more.
	BatchLinger time.Duration
	// BatchWindow bounds how long a worker keeps adding messages to a batch
	// (their side effects run one after another before the commit), so
	// that slow side effects are committed and acked promptly; default 5ms.
	BatchWindow time.Duration
	// Fault, when set, is called at the runner's fault points (see Fault*
	// constants) with the event in hand; an error it returns aborts
	// handling there, as a crash would. Tests only. The same points are
	// also named per consumer in package fault (<durable>.after-effect,
	// <durable>.after-commit), which PRSAGA_FAULTS arms.
	Fault func(point string, env contracts.Envelope) error
	Now   func() time.Time
	// Telemetry, when set, observes every message handled (a span each,
	// and metrics); nil is off.
	Telemetry Telemetry
}

// Fault points of the runner, as Config.Fault sees them (package fault
// names them per consumer).
const (
	FaultAfterEffect = "runner.after-effect" // side effect done, nothing committed
	FaultAfterCommit = "runner.after-commit" // committed, not acked
)

// Runner consumes one durable consumer until stopped.
type Runner struct {
	cfg  Config
	cc   jetstream.ConsumeContext
	work chan *delivery
	// inflight maps the event id of every message delivered and not yet
	// settled to the latest copy's done channel (see claim).
	mu       sync.Mutex
	inflight map[string]chan struct{}
	// waiting lists the deliveries an inbox probe may take (probe.go);
	// guarded by mu.
	waiting []*delivery
	// afterEffect and afterCommit are this consumer's fault point names.
	afterEffect, afterCommit string
	// quit is closed by Stop: the intake hands over no more messages and
	// idle workers exit. work itself is never closed, because the consume
	// callback may still be running when Stop gets past cc.Closed().
	quit     chan struct{}
	wg       sync.WaitGroup
	stopOnce sync.Once
	// help wakes a waiting worker when a batch has run for HelpAfter;
	// stalled counts the batches running longer than that (helpers keep
	// taking messages while it is above zero). nil help: no waiting.
	help    chan struct{}
	stalled atomic.Int32
}

var errDuplicate = errors.New("duplicate delivery")

// maxPullAhead bounds the messages a runner holds delivered but unhandled.
const maxPullAhead = 256

// A pull consumer now and then loses its outstanding pull request: the
// server holds no request (no deliveries, no heartbeats) while nats.go
// counts one as pending and asks for nothing more, until its heartbeat
// monitor notices the silence (2 × heartbeat) and pulls again. Seen as
// 30 s stalls of the ledger's multi-subject consumer in about one bench
// run in four with nats.go's defaults (30 s expiry, 15 s heartbeat); cf.
// nats-io/nats.go#1621, #1622. Short requests with frequent idle
// heartbeats (nats.go's shortest, 500ms) bound such a stall to a second;
// an idle consumer costs a pull request every 5 s and two heartbeats a
// second.
const (
	pullExpiry    = 5 * time.Second
	pullHeartbeat = 500 * time.Millisecond
)

// pullMax is how many messages a runner keeps asked for. nats.go asks for
// more only from a message's handler, and not while it is still sending its
// last pull: a pull delivered whole in that moment leaves nothing asked for
// until the heartbeat monitor notices, a second later (docs/performance.md,
// "Stalls"; seen on the ledger's consumer). It asks for half of this at a
// time; when that half is more than the intake holds (ahead), the hand-over
// waits for a worker before a pull can arrive whole, which that moment
// rarely allows. Consumers pulling 256 ahead keep 256.
func pullMax(workers, ahead int) int {
	return max(2*workers, ahead, min(2*ahead+2, maxPullAhead))
}

// consumeError logs an error nats.go reports while consuming. A missed
// heartbeat is the lost pull request above (docs/performance.md, "Stalls"):
// the consumer delivered nothing for two heartbeats and nats.go pulled
// again; an idle consumer gets heartbeats, so it is logged where operators
// see it. The rest (a pull request's status) is nats.go's to handle.
func consumeError(log *slog.Logger, err error) {
	if errors.Is(err, jetstream.ErrNoHeartbeat) {
		log.Info("pull request lost: no heartbeat for two intervals, pulled again", "heartbeat", pullHeartbeat.String())
		return
	}
	log.Debug("consume", "err", err)
}

// Start creates the durable consumer — waiting for JetStream while it
// cannot be reached (bus.Await), until ctx ends — and starts consuming.
func Start(ctx context.Context, cfg Config) (*Runner, error) {
	if cfg.Workers <= 0 {
		cfg.Workers = 4
	}
	if cfg.HelpAfter == 0 {
		cfg.HelpAfter = 10 * time.Millisecond
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 64
	}
	if cfg.BatchWindow <= 0 {
		cfg.BatchWindow = 5 * time.Millisecond
	}
	if len(cfg.Backoff) == 0 {
		cfg.Backoff = []time.Duration{time.Second, 5 * time.Second, 30 * time.Second}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.Log = cfg.Log.With("consumer", cfg.Consumer.Durable)
	fault.Register(fault.AfterEffect(cfg.Consumer.Durable), fault.AfterCommit(cfg.Consumer.Durable))
	var c jetstream.Consumer
	err := cfg.Bus.Await(ctx, cfg.Log, "consumer "+cfg.Consumer.Durable, func(ctx context.Context) (err error) {
		c, err = cfg.Bus.Consumer(ctx, cfg.Consumer)
		return err
	})
	if err != nil {
		return nil, err
	}
	// Handling never ends early (Stop lets it finish), so its context is
	// never canceled: without a Done channel, database/sql and the SQLite
	// driver skip the watcher goroutine they start per transaction and per
	// statement of a cancelable context (a goroutine per statement, several
	// per message).
	rctx := context.WithoutCancel(ctx)
	// Up to a batch per worker is pulled ahead, so that a worker finishing
	// a batch finds the next one waiting; every message pulled but not yet
	// handled is delivered, its AckWait running.
	ahead := min(cfg.Batch*cfg.Workers, maxPullAhead)
	r := &Runner{cfg: cfg, work: make(chan *delivery, ahead), quit: make(chan struct{}),
		inflight:    map[string]chan struct{}{},
		afterEffect: fault.AfterEffect(cfg.Consumer.Durable), afterCommit: fault.AfterCommit(cfg.Consumer.Durable)}
	if cfg.HelpAfter >= 0 && cfg.Workers > 1 {
		r.help = make(chan struct{}, cfg.Workers-1)
	}
	for i := 0; i < cfg.Workers; i++ {
		r.wg.Add(1)
		go r.worker(rctx, i > 0 && r.help != nil)
	}
	r.cc, err = c.Consume(func(m jetstream.Msg) {
		d := r.claim(m)
		select {
		case r.work <- d:
		case <-r.quit:
			// Not handled: redelivered after AckWait, to this or another instance.
			r.release(d)
		}
	}, jetstream.PullMaxMessages(pullMax(cfg.Workers, ahead)),
		jetstream.PullExpiry(pullExpiry), jetstream.PullHeartbeat(pullHeartbeat), jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			consumeError(cfg.Log, err)
		}))
	if err != nil {
		close(r.quit)
		r.wg.Wait()
		return nil, fmt.Errorf("consume %s: %w", cfg.Consumer.Durable, err)
	}
	return r, nil
}

// worker takes batches of messages until Stop. A helper first waits for a
// batch to stall (batch), then takes messages until no batch is stalled.
func (r *Runner) worker(ctx context.Context, helper bool) {
	defer r.wg.Done()
	for {
		if helper {
			select {
			case <-r.help:
			case <-r.quit:
				return
			}
		}
		for {
			select {
			case d := <-r.work:
				for d != nil {
					d = r.batch(ctx, d)
				}
			case <-r.quit:
				return
			}
			if helper && r.stalled.Load() == 0 {
				break
			}
		}
	}
}

// batch handles the batch that starts with d; when it runs for HelpAfter,
// it counts as stalled until it ends and wakes a helper.
func (r *Runner) batch(ctx context.Context, d *delivery) (next *delivery) {
	if r.help == nil {
		return r.handleBatch(ctx, d)
	}
	const running, stalled, ended = 0, 1, 2
	var state atomic.Int32
	t := time.AfterFunc(r.cfg.HelpAfter, func() {
		if state.CompareAndSwap(running, stalled) {
			r.stalled.Add(1)
			select {
			case r.help <- struct{}{}:
			default: // every helper woken already
			}
		}
	})
	next = r.handleBatch(ctx, d)
	t.Stop()
	if !state.CompareAndSwap(running, ended) {
		r.stalled.Add(-1)
	}
	return next
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
	})
}
