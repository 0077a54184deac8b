// Package server assembles the indexer: its search index, the commit
// history reader, its consumer and its search route (indexer/httpapi).
package server

import (
	"context"
	"net/http"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/service"
	"github.com/prsaga/prsaga/platform/store"
	"github.com/prsaga/prsaga/services/indexer"
	"github.com/prsaga/prsaga/services/indexer/bleveindex"
	"github.com/prsaga/prsaga/services/indexer/gitlog"
	"github.com/prsaga/prsaga/services/indexer/httpapi"
)

// Server is the assembled indexer. Safe for concurrent use.
type Server struct {
	db   store.DB
	idx  *bleveindex.Index
	x    *indexer.Indexer
	api  *httpapi.API
	snap *httpapi.Snapshot
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
	opts.Now, opts.Log = service.Clock(opts.Now), service.Logger(opts.Log)
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
	snap := &httpapi.Snapshot{Index: idx, ReadTokens: opts.ReadTokens, Log: opts.Log}
	return &Server{db: opts.DB, idx: idx, x: x, api: api, snap: snap}, nil
}

// Routes adds the search route, GET /api/v1/search, and the index's
// snapshot for backups, GET /api/v1/index/snapshot (indexer/httpapi).
func (s *Server) Routes(mux *http.ServeMux) {
	s.api.Routes(mux)
	s.snap.Routes(mux)
}

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

// batchLinger: see Spec.
const batchLinger = 15 * time.Millisecond

// Spec is the indexer's consumer: a step consumer of notified events (it
// gives up after MaxDeliver with retries_exhausted at INDEXING), handling
// every event already delivered in one call and one index write. One
// worker: the index has one writer anyway (bleve serialises writes), and
// what arrives while it writes makes the next batch bigger instead of a
// second, smaller write beside it.
//
// A batch waits up to batchLinger for more events: a bleve write costs
// about 3 ms of CPU besides its documents' (a segment file persisted,
// then merged), so batches twice as big halve that share. In a bench run
// (W1, procs) the indexer's CPU fell by a sixth with 15 ms; a PR is
// indexed that much later at most.
func (s *Server) Spec() service.Spec {
	return service.Spec{
		Name: contracts.ServiceIndexer,
		DB:   s.db,
		Consumers: []service.Consumer{{
			Spec:        bus.ConsumerSpec{Durable: contracts.ConsumerIndexer, Subjects: contracts.SubjectsOf(contracts.TypeNotified), GiveUp: true},
			Step:        contracts.StateIndexing,
			HandleBatch: s.x.OnNotifiedBatch,
			Workers:     1,
			BatchLinger: batchLinger,
		}},
	}
}
