package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/httpx"
	"github.com/prsaga/prsaga/platform/service"
	psqlite "github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/platform/store"
	"github.com/prsaga/prsaga/services/validator"
	"github.com/prsaga/prsaga/services/validator/gitrefs"
	"github.com/prsaga/prsaga/services/validator/httpapi"
	vsqlite "github.com/prsaga/prsaga/services/validator/sqlite"
)

// Migrations are the validator's tables; open its database with them.
var Migrations psqlite.Migrations = vsqlite.Migrations

// Options of the validator.
type Options struct {
	// DB is the validator's own database, opened with Migrations.
	DB store.DB
	// ReposDir holds the bare repositories, <ReposDir>/<owner>/<name>.git.
	ReposDir string
	// DefaultRequired are the contexts required on a target branch without
	// configured protection. nil means ["ci"]; an empty non-nil list
	// requires nothing.
	DefaultRequired []string
	// OperatorTokens may set protection and post statuses; StatusTokens
	// (CI systems) may post statuses. Empty: routes open (loopback only).
	OperatorTokens, StatusTokens httpx.Tokens
	// ReadTokens may read statuses and protection, as OperatorTokens may;
	// none of either set: reads are open (loopback only).
	ReadTokens httpx.Tokens
	// Now is the clock of emitted events and stored statuses; default time.Now.
	Now func() time.Time
	// Log receives the HTTP routes' internal errors; default discards.
	// (Event handling logs through the runner's per-event logger.)
	Log *slog.Logger
}

// Validate reports every problem of the options at once.
func (o Options) Validate() error {
	var errs []error
	if o.DB == nil {
		errs = append(errs, errors.New("validator: DB is required"))
	}
	if o.ReposDir == "" {
		errs = append(errs, errors.New("validator: ReposDir is required"))
	}
	if err := validator.ValidateRequired(o.DefaultRequired); err != nil {
		errs = append(errs, fmt.Errorf("validator: default %w", err))
	}
	return errors.Join(errs...)
}

// Server is the assembled validator. Safe for concurrent use.
type Server struct {
	v   *validator.Validator
	api *httpapi.API
}

// New checks opts and builds the validator.
func New(opts Options) (*Server, error) {
	if opts.DefaultRequired == nil {
		opts.DefaultRequired = []string{"ci"}
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts.Now, opts.Log = service.Clock(opts.Now), service.Logger(opts.Log)
	st, err := Adapter(opts.DB)
	if err != nil {
		return nil, err
	}
	required := append([]string{}, opts.DefaultRequired...)
	v := &validator.Validator{
		DB:       opts.DB,
		Store:    st,
		Heads:    gitrefs.New(opts.ReposDir),
		Required: required,
		Now:      opts.Now,
	}
	return &Server{
		v: v,
		api: &httpapi.API{
			Store:           v,
			DefaultRequired: required,
			OperatorTokens:  opts.OperatorTokens,
			StatusTokens:    opts.StatusTokens,
			ReadTokens:      opts.ReadTokens,
			Log:             opts.Log,
		},
	}, nil
}

// Spec is the validator's consumers for service.Start: merge requests
// (a step consumer: it gives up after MaxDeliver with retries_exhausted at
// VALIDATING) and the lock events (never gives up: a lost release would
// block the PR for good). The lock events include validated: a retry at
// MERGING replays it, and the lock must move to the retry's attempt.
func (s *Server) Spec() service.Spec {
	return service.Spec{
		Name: contracts.ServiceValidator,
		DB:   s.v.DB,
		Consumers: []service.Consumer{{
			Spec: bus.ConsumerSpec{
				Durable:  contracts.ConsumerValidator,
				Subjects: contracts.SubjectsOf(contracts.TypeMergeRequested),
				GiveUp:   true,
			},
			Step:   contracts.StateValidating,
			Handle: s.v.OnMergeRequested,
			// Reading the branch heads changes nothing: the decision, the
			// lock and the answer are all in the commit.
			InCommitOnly: true,
		}, {
			Spec: bus.ConsumerSpec{
				Durable: contracts.ConsumerValidatorLock,
				// A retry at MERGING (the replay of validated) passes
				// the lock here before the merger sees it.
				Subjects: []string{
					contracts.ReplaySubject(contracts.TypeMergeValidated),
					contracts.SubjectMerged, contracts.ReplaySubject(contracts.TypeMerged),
					contracts.SubjectStepFailedAny, contracts.SubjectTimedOut,
				},
			},
			Handle:       s.v.OnLockEvent,
			InCommitOnly: true,
		}},
	}
}

// Routes registers the status and protection API on mux.
func (s *Server) Routes(mux *http.ServeMux) { s.api.Routes(mux) }
