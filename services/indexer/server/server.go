// Package server assembles the indexer: its search index, its consumer and
// its search route.
package server

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/httpx"
	"github.com/prsaga/prsaga/platform/service"
	psqlite "github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/services/indexer"
	"github.com/prsaga/prsaga/services/indexer/bleveindex"
)

// Options of the indexer.
type Options struct {
	DB       *psqlite.DB
	IndexDir string
	// LockTimeout bounds the wait for the index's single-writer lock.
	LockTimeout time.Duration
	Now         func() time.Time
}

// Server is the assembled indexer.
type Server struct {
	db  *psqlite.DB
	idx *bleveindex.Index
	x   *indexer.Indexer
}

// New opens (or creates) the index. It fails when another process holds it.
func New(opts Options) (*Server, error) {
	if opts.LockTimeout == 0 {
		opts.LockTimeout = 5 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	idx, err := bleveindex.Open(opts.IndexDir, opts.LockTimeout)
	if err != nil {
		return nil, err
	}
	return &Server{db: opts.DB, idx: idx, x: &indexer.Indexer{Index: idx, Now: opts.Now}}, nil
}

// Close closes the index.
func (s *Server) Close() error { return s.idx.Close() }

// Spec is the indexer's consumer.
func (s *Server) Spec() service.Spec {
	return service.Spec{
		Name: contracts.ServiceIndexer,
		DB:   s.db,
		Consumers: []service.Consumer{{
			Spec:   bus.ConsumerSpec{Durable: contracts.ConsumerIndexer, Subjects: []string{contracts.SubjectNotified}, GiveUp: true},
			Step:   contracts.StateIndexing,
			Handle: s.x.OnNotified,
		}},
	}
}

// Routes adds GET /api/v1/search?q=&limit=.
func (s *Server) Routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/v1/search", func(w http.ResponseWriter, r *http.Request) {
		limit := 0
		if l := r.URL.Query().Get("limit"); l != "" {
			n, err := strconv.Atoi(l)
			if err != nil || n < 1 {
				httpx.WriteError(w, httpx.Errorf(http.StatusBadRequest, "limit %q is not a positive integer", l))
				return
			}
			limit = n
		}
		res, err := s.idx.Search(r.Context(), r.URL.Query().Get("q"), limit)
		if errors.Is(err, bleveindex.ErrBadQuery) {
			httpx.WriteError(w, httpx.Errorf(http.StatusBadRequest, "%s", err))
			return
		}
		if err != nil {
			httpx.WriteError(w, err)
			return
		}
		hits := make([]map[string]any, 0, len(res.Hits))
		for _, h := range res.Hits {
			hits = append(hits, map[string]any{"pr_id": h.PRID, "repo": h.Repo, "title": h.Title, "merge_sha": h.MergeSHA, "score": h.Score})
		}
		httpx.WriteJSON(w, http.StatusOK, map[string]any{"total": res.Total, "hits": hits})
	})
}
