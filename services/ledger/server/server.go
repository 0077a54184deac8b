package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/httpx"
	"github.com/prsaga/prsaga/platform/logging"
	"github.com/prsaga/prsaga/platform/service"
	"github.com/prsaga/prsaga/platform/step"
	"github.com/prsaga/prsaga/platform/store"
	"github.com/prsaga/prsaga/services/ledger"
	"github.com/prsaga/prsaga/services/ledger/httpapi"
	ledgerjs "github.com/prsaga/prsaga/services/ledger/jetstream"
	ledgersqlite "github.com/prsaga/prsaga/services/ledger/sqlite"
)

// Options of the ledger service.
type Options struct {
	// DB is the ledger's database, opened with Migrations.
	DB store.DB
	// OperatorTokens guard the mutating routes; empty lets every caller
	// through (allowed on loopback listeners only — the caller checks).
	OperatorTokens httpx.Tokens
	// TokenNames[i] names OperatorTokens[i] in the history of retries.
	TokenNames []string
	// ReadTokens may read the API and the dashboard but not act; the
	// operator tokens read too. With any token set, reads need one.
	ReadTokens httpx.Tokens
	// Bus, when set, lets the watchdog and the dashboard ask JetStream
	// about consumers and dead letters; StartWatchdog needs it.
	Bus *bus.Bus
	// Watchdog is checked by New against the delivery budget.
	Watchdog ledger.WatchdogConfig
	// Log receives the watchdog's and the API's lines; default
	// slog.Default() with service=ledger.
	Log *slog.Logger
	// SessionKey signs the dashboard's cookies; default random per process.
	SessionKey []byte
	// Now is the clock of rows and events; default the DB's clock.
	Now func() time.Time
	// Metrics, when set, is told what the projection, retries and the
	// watchdog did (telemetry.Telemetry is one).
	Metrics ledger.Metrics
}

// Migrations is the ledger's schema, to open Options.DB with.
var Migrations = ledgersqlite.Migrations

// subjectsSaga are the subjects the ledger projects: every saga event.
var subjectsSaga = []string{"prsaga.merge.>"}

// Server is the ledger service. Safe for concurrent use.
type Server struct {
	db       store.DB
	store    *ledger.Store
	ledger   *ledger.Ledger
	api      *httpapi.API
	watchdog *ledger.Watchdog // nil without a bus
	log      *slog.Logger
}

// New checks the options and the database's schema.
func New(opts Options) (*Server, error) {
	if opts.DB == nil {
		return nil, errors.New("ledger: Options.DB is required")
	}
	wd := opts.Watchdog.WithDefaults()
	if err := wd.Validate(); err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	now := opts.Now
	if now == nil {
		now = opts.DB.Now
	}
	log := opts.Log
	if log == nil {
		log = slog.Default().With("service", contracts.ServiceLedger)
	}
	store, err := Adapter(opts.DB)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := store.Check(ctx); err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	proj := &ledger.Projector{Now: now, Metrics: opts.Metrics}
	s := &Server{db: opts.DB, store: store, ledger: &ledger.Ledger{Store: store, Proj: proj}, log: log}
	s.api = &httpapi.API{
		Sagas:      store,
		Outbox:     store,
		Retrier:    &ledger.Retrier{Store: store, Proj: proj, NewID: step.NewID, Log: log},
		Tokens:     opts.OperatorTokens,
		TokenNames: opts.TokenNames,
		ReadTokens: opts.ReadTokens,
		Timeouts:   wd.Timeouts,
		SessionKey: opts.SessionKey,
		Now:        now,
		NewID:      step.NewID,
		Log:        log.With("component", "http"),
	}
	if opts.Bus != nil {
		probe := ledgerjs.New(opts.Bus)
		s.api.DLQ = probe.DeadLettersTotal
		s.watchdog = &ledger.Watchdog{Config: wd, Store: store, Bus: probe, Proj: proj, Now: now,
			Log: log.With("component", "watchdog"), Metrics: opts.Metrics}
	}
	return s, nil
}

// Watchdog is the server's watchdog (nil without Options.Bus), for tests
// that tick it by hand.
func (s *Server) Watchdog() *ledger.Watchdog { return s.watchdog }

// StartWatchdog runs the watchdog until the returned stop is called (stop
// waits for a tick in progress). It needs Options.Bus.
func (s *Server) StartWatchdog() (stop func(), err error) {
	if s.watchdog == nil {
		return nil, errors.New("ledger: the watchdog needs Options.Bus")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.watchdog.Run(ctx)
	}()
	return func() { cancel(); <-done }, nil
}

// Apply projects one event in a transaction of its own, as a second ledger
// instance handling a redelivery would (the consumer does the same inside
// the runner's transaction). Safe to call concurrently with the consumer.
func (s *Server) Apply(ctx context.Context, env contracts.Envelope) (ledger.Result, error) {
	return s.ledger.Apply(ctx, env, logging.ForEvent(s.log, env))
}

// Spec is the ledger's consumer and outbox for service.Start: it consumes
// every saga event and never gives up on one (design §5).
func (s *Server) Spec() service.Spec {
	return service.Spec{
		Name: contracts.ServiceLedger,
		DB:   s.db,
		Consumers: []service.Consumer{{
			Spec:   bus.ConsumerSpec{Durable: contracts.ConsumerLedger, Subjects: subjectsSaga, GiveUp: false},
			Handle: s.ledger.OnSagaEvent,
			// One worker: events are projected in stream order, so a normal
			// run shows no inferred transitions. The rank-ordered state
			// machine stays correct for any order (redeliveries, several
			// ledgers).
			Workers: 1,
			// The projection is all in the commit.
			InCommitOnly: true,
		}},
	}
}

// Routes registers the API and the dashboard on mux.
func (s *Server) Routes(mux *http.ServeMux) { s.api.Routes(mux) }

// StartBodyRetention prunes the event bodies of merged sagas (see
// ledger.BodyRetention) until the returned stop is called; nil when r
// prunes nothing or the store cannot prune (YDB's adapter can; a store
// without it keeps every body).
func (s *Server) StartBodyRetention(r ledger.BodyRetention) (stop func()) {
	p, ok := s.store.Tables.(ledger.BodyPruner)
	if !ok || r.Keep <= 0 || r.Interval <= 0 {
		return nil
	}
	if r.Log == nil {
		r.Log = s.log.With("component", "retention")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx, p)
	}()
	return func() { cancel(); <-done }
}
