// Package server assembles the notifier: its store, webhook sender,
// consumer and watchers API.
package server

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/httpx"
	"github.com/prsaga/prsaga/platform/service"
	"github.com/prsaga/prsaga/platform/store"
	"github.com/prsaga/prsaga/services/notifier"
	"github.com/prsaga/prsaga/services/notifier/httpapi"
	nsqlite "github.com/prsaga/prsaga/services/notifier/sqlite"
	"github.com/prsaga/prsaga/services/notifier/webhook"
)

// Migrations of the notifier's tables.
var Migrations = nsqlite.Migrations

// Options of the notifier.
type Options struct {
	// DB is the notifier's own database, opened with Migrations.
	DB           store.DB
	AllowPrivate bool // PRSAGA_WEBHOOK_ALLOW_PRIVATE: tests and local demos only
	// OperatorTokens may replace watchers. Empty: open (loopback only).
	OperatorTokens httpx.Tokens
	// ReadTokens may list watchers, as OperatorTokens may; none of either
	// set: the list is open (loopback only).
	ReadTokens httpx.Tokens
	// Webhook tunes the sender: per-attempt timeout, attempts, backoff.
	// Its AllowPrivate is set from the field above.
	Webhook webhook.Config
	// Parallel bounds the watchers of one event notified at once; 0 means
	// notifier.DefaultParallel.
	Parallel int
	// Now is the clock of emitted events; default time.Now.
	Now func() time.Time
	// Log receives the HTTP routes' internal errors; default discards.
	// (Event handling logs through the runner's per-event logger.)
	Log *slog.Logger
	// LookupIP resolves a watcher's host name when it is put, to refuse
	// one that resolves to a private address (webhook.CheckPublic);
	// default the system resolver. Tests set one that asks no DNS server.
	LookupIP webhook.LookupIP
	// RetentionDeliveries keeps the delivery rows of runs delivered to
	// every watcher this long (PRSAGA_RETENTION_DELIVERIES); 0 keeps them.
	RetentionDeliveries time.Duration
}

// Validate reports every problem of the options at once.
func (o Options) Validate() error {
	var errs []error
	if o.DB == nil {
		errs = append(errs, errors.New("notifier: DB is required"))
	}
	if o.Parallel < 0 {
		errs = append(errs, fmt.Errorf("notifier: Parallel is %d (at least 1, or 0 for the default)", o.Parallel))
	}
	w := o.Webhook
	w.AllowPrivate = o.AllowPrivate
	if err := w.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("notifier: %w", err))
	}
	return errors.Join(errs...)
}

// RetryBudget is the notify step's own retry budget (design §4): the
// longest one merged event is worked on before it is answered, whatever the
// number of watchers — Webhook.MaxAttempts × (the per-attempt timeout) plus
// the backoff between attempts (webhook.Config.Budget). Watchers are
// notified in parallel under one deadline of this length; one not delivered
// by then counts as failed (step_failed webhook_failed, retryable). The
// runner sends InProgress every AckWait/2 meanwhile, so this may exceed
// AckWait. The step's timeout must exceed AckWait × MaxDeliver + the backoff
// total + RetryBudget: check it at start.
func (o Options) RetryBudget() time.Duration { return o.Webhook.Budget() }

// Server is the assembled notifier. Safe for concurrent use.
type Server struct {
	opts Options
	n    *notifier.Notifier
	api  *httpapi.API
}

// New checks opts and builds the notifier.
func New(opts Options) (*Server, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts.Now, opts.Log = service.Clock(opts.Now), service.Logger(opts.Log)
	opts.Webhook.AllowPrivate = opts.AllowPrivate
	sender, err := webhook.NewSender(opts.Webhook)
	if err != nil {
		return nil, err
	}
	st, err := Adapter(opts.DB)
	if err != nil {
		return nil, err
	}
	return &Server{
		opts: opts,
		n: &notifier.Notifier{
			Store: st, Sender: webhookSender{sender}, Budget: opts.RetryBudget(), Parallel: opts.Parallel, Now: opts.Now,
		},
		api: &httpapi.API{
			Store:          st,
			AllowPrivate:   opts.AllowPrivate,
			OperatorTokens: opts.OperatorTokens,
			ReadTokens:     opts.ReadTokens,
			LookupIP:       opts.LookupIP,
			Log:            opts.Log,
		},
	}, nil
}

// RetryBudget is Options.RetryBudget of the options the server runs with.
func (s *Server) RetryBudget() time.Duration { return s.opts.RetryBudget() }

// Spec is the notifier's consumer: a step consumer of merged events (it
// gives up after MaxDeliver with retries_exhausted at NOTIFYING).
func (s *Server) Spec() service.Spec {
	return service.Spec{
		Name: contracts.ServiceNotifier,
		DB:   s.opts.DB,
		Consumers: []service.Consumer{{
			Spec:   bus.ConsumerSpec{Durable: contracts.ConsumerNotifier, Subjects: contracts.SubjectsOf(contracts.TypeMerged), GiveUp: true},
			Step:   contracts.StateNotifying,
			Handle: s.n.OnMerged,
		}},
		Prune: s.prune(),
	}
}
