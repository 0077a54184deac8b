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
	"github.com/prsaga/prsaga/platform/runner"
	"github.com/prsaga/prsaga/platform/service"
	psqlite "github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/services/ledger"
	"github.com/prsaga/prsaga/services/ledger/httpapi"
	ledgersqlite "github.com/prsaga/prsaga/services/ledger/sqlite"
)

// Options of the ledger service.
type Options struct {
	// DB is the ledger's database, opened with Migrations.
	DB *psqlite.DB
	// OperatorTokens guard the mutating routes; empty lets every caller
	// through (allowed on loopback listeners only — the caller checks).
	OperatorTokens httpx.Tokens
	// Now is the clock of rows and events; default the DB's clock.
	Now func() time.Time
}

// Migrations is the ledger's schema, to open Options.DB with.
var Migrations = ledgersqlite.Migrations

// subjectsSaga are the subjects the ledger projects: every saga event.
var subjectsSaga = []string{"prsaga.merge.>"}

// Server is the ledger service. Safe for concurrent use.
type Server struct {
	db    *psqlite.DB
	store *ledgersqlite.Store
	proj  *ledger.Projector
	api   *httpapi.API
}

// New checks the options and the database's schema.
func New(opts Options) (*Server, error) {
	if opts.DB == nil {
		return nil, errors.New("ledger: Options.DB is required")
	}
	now := opts.Now
	if now == nil {
		now = opts.DB.Now
	}
	store := ledgersqlite.NewStore(opts.DB)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := store.Check(ctx); err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	return &Server{
		db:    opts.DB,
		store: store,
		proj:  &ledger.Projector{Now: now},
		api: &httpapi.API{
			Sagas:  store,
			Outbox: store,
			Tokens: opts.OperatorTokens,
			Now:    now,
			NewID:  runner.NewID,
			// Options carries no logger; internal HTTP errors go to the
			// process's default logger, which cmd/prsaga sets up.
			Log: slog.Default().With("service", contracts.ServiceLedger, "component", "http"),
		},
	}, nil
}

// Spec is the ledger's consumer and outbox for service.Start: it consumes
// every saga event and never gives up on one (DESIGN §5).
func (s *Server) Spec() service.Spec {
	return service.Spec{
		Name: contracts.ServiceLedger,
		DB:   s.db,
		Consumers: []service.Consumer{{
			Spec:   bus.ConsumerSpec{Durable: contracts.ConsumerLedger, Subjects: subjectsSaga, GiveUp: false},
			Handle: s.onSagaEvent,
			// One worker: events are projected in stream order, so a normal
			// run shows no inferred transitions. The rank-ordered state
			// machine stays correct for any order (redeliveries, several
			// ledgers).
			Workers: 1,
		}},
	}
}

// Routes registers the API and the dashboard on mux.
func (s *Server) Routes(mux *http.ServeMux) { s.api.Routes(mux) }

// onSagaEvent projects one event. It has no side effect outside the
// transaction: everything happens in the runner's commit, together with
// the inbox row and the outbox.
func (s *Server) onSagaEvent(ctx context.Context, env contracts.Envelope, log *slog.Logger) (runner.Commit, error) {
	return func(tx *psqlite.Tx) error {
		_, err := s.proj.Project(ctx, ledgersqlite.Bind(tx), env, log)
		return err
	}, nil
}
