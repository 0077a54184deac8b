// Package server assembles the indexer: its search index, the commit
// history reader, its consumer and its search route (indexer/httpapi).
package server

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/httpx"
	"github.com/prsaga/prsaga/platform/service"
	"github.com/prsaga/prsaga/platform/store"
	"github.com/prsaga/prsaga/services/indexer"
	"github.com/prsaga/prsaga/services/indexer/bleveindex"
	"github.com/prsaga/prsaga/services/indexer/gitlog"
	"github.com/prsaga/prsaga/services/indexer/httpapi"
)

// Options of the indexer.
type Options struct {
	// DB is the indexer's own database (inbox and outbox only).
	DB store.DB
	// IndexDir holds the bleve index; created if missing.
	IndexDir string
	// ReposDir holds the bare repositories, <ReposDir>/<owner>/<name>.git,
	// read for the commit messages of each merge. Empty: PRs are indexed
	// without commit messages.
	ReposDir string
	// LockTimeout bounds the wait for the index's single-writer lock, at
	// start and when the index is reopened after a failed write; default 5s.
	LockTimeout time.Duration
	// WriteAttempts bounds the index writes of one event before it is
	// answered step_failed(INDEXING, index_error); default 3.
	WriteAttempts int
	// Now is the clock of emitted events; default time.Now.
	Now func() time.Time
	// Log receives the HTTP route's internal errors; default discards.
	// (Event handling logs through the runner's per-event logger.)
	Log *slog.Logger
	// ReadTokens may search (titles and commit messages of private
	// repositories too); none set: the search is open (loopback only).
	ReadTokens httpx.Tokens
}

// Validate reports every problem of the options at once.
func (o Options) Validate() error {
	var errs []error
	if o.DB == nil {
		errs = append(errs, errors.New("indexer: DB is required"))
	}
	if o.IndexDir == "" {
		errs = append(errs, errors.New("indexer: IndexDir is required"))
	}
	if o.LockTimeout < 0 {
		errs = append(errs, errors.New("indexer: LockTimeout is negative"))
	}
	if o.WriteAttempts < 0 {
		errs = append(errs, errors.New("indexer: WriteAttempts is negative"))
	}
	return errors.Join(errs...)
}

// Server is the assembled indexer. Safe for concurrent use.
type Server struct {
	db  store.DB
	idx *bleveindex.Index
	x   *indexer.Indexer
	api *httpapi.API
}

// New opens (or creates) the index as its one writer (bleve allows one:
// design §9) — or, when another indexer is the writer, returns a standby:
// Ready fails saying so, and AwaitActive waits to take over. It fails when
// the index cannot be opened otherwise (corrupt, or a reindex holding it
// for longer than LockTimeout).
func New(opts Options) (*Server, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if opts.LockTimeout == 0 {
		opts.LockTimeout = bleveindex.DefaultLockTimeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	x := &indexer.Indexer{Attempts: opts.WriteAttempts, Now: opts.Now}
	if opts.ReposDir != "" {
		r, err := gitlog.New(opts.ReposDir)
		if err != nil {
			return nil, err
		}
		x.History = r
	}
	idx, err := bleveindex.OpenWriter(opts.IndexDir, opts.LockTimeout)
	if err != nil {
		return nil, err
	}
	x.Index = idx
	api := &httpapi.API{Index: idx, ReadTokens: opts.ReadTokens, Log: opts.Log}
	return &Server{db: opts.DB, idx: idx, x: x, api: api}, nil
}

// Routes adds the search route, GET /api/v1/search (indexer/httpapi).
func (s *Server) Routes(mux *http.ServeMux) { s.api.Routes(mux) }

// Close closes the index. Stop the service (its consumer) first: an event
// handled after Close is redelivered, not failed.
func (s *Server) Close() error { return s.idx.Close() }

// Active reports whether this indexer is the index's writer: its consumer
// may run. A standby's must not — it would take events it cannot index.
func (s *Server) Active() bool { return s.idx.Active() }

// AwaitActive waits until this indexer is the index's writer (at once if
// it is): until the one holding the index stops, ctx ends, or Close.
func (s *Server) AwaitActive(ctx context.Context) error { return s.idx.Activate(ctx) }

// Ready reports whether the index is open and answers searches (for
// /readyz): nil, or why not — e.g. a reopen after a failed write could not
// take the index's lock.
func (s *Server) Ready() error { return s.idx.Ready() }

// Spec is the indexer's consumer: a step consumer of notified events (it
// gives up after MaxDeliver with retries_exhausted at INDEXING), handling
// every event already delivered in one call and one index write. One
// worker: the index has one writer anyway (bleve serialises writes), and
// what arrives while it writes makes the next batch bigger instead of a
// second, smaller write beside it.
func (s *Server) Spec() service.Spec {
	return service.Spec{
		Name: contracts.ServiceIndexer,
		DB:   s.db,
		Consumers: []service.Consumer{{
			Spec:        bus.ConsumerSpec{Durable: contracts.ConsumerIndexer, Subjects: []string{contracts.SubjectNotified}, GiveUp: true},
			Step:        contracts.StateIndexing,
			HandleBatch: s.x.OnNotifiedBatch,
			Workers:     1,
		}},
	}
}
