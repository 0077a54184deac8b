package httpapi

import (
	"io"
	"log/slog"
	"net/http"
	"sync"

	"github.com/prsaga/prsaga/platform/httpx"
	"github.com/prsaga/prsaga/services/indexer/bleveindex"
)

// Copier writes a consistent copy of the search index as a tar stream,
// while the indexer goes on writing (bleveindex.Index.WriteTar).
type Copier interface {
	WriteTar(w io.Writer) error
}

var _ Copier = (*bleveindex.Index)(nil)

// Snapshot serves GET /api/v1/index/snapshot: a copy of the index as
// application/x-tar, for `prsaga backup` (design §7), which cannot open an
// index a running indexer holds (bleve allows one opener). It needs a read
// token: the copy holds what a search shows, no more. One copy at a time;
// a second request meanwhile is answered 409.
type Snapshot struct {
	Index      Copier
	ReadTokens httpx.Tokens
	Log        *slog.Logger
	busy       sync.Mutex
}

// Routes adds the snapshot route.
func (s *Snapshot) Routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/v1/index/snapshot", s.ReadTokens.RequireRead(s.snapshot))
}

func (s *Snapshot) snapshot(w http.ResponseWriter, r *http.Request) {
	if !s.busy.TryLock() {
		httpx.WriteError(w, httpx.Errorf(http.StatusConflict, "an index snapshot is being taken already; try again when it is done"))
		return
	}
	defer s.busy.Unlock()
	tw := &startedWriter{w: w}
	if err := s.Index.WriteTar(tw); err != nil {
		if s.Log != nil {
			s.Log.ErrorContext(r.Context(), "index snapshot failed", "err", err)
		}
		if !tw.started {
			httpx.WriteError(w, httpx.Errorf(http.StatusServiceUnavailable, "the search index could not be copied: %s", err))
		}
		// Once the tar has begun the status is sent: the reader sees the
		// stream end early, which a tar reader reports.
		return
	}
}

// startedWriter sets the content type before the first byte, and says
// whether one was written.
type startedWriter struct {
	w       http.ResponseWriter
	started bool
}

func (s *startedWriter) Write(p []byte) (int, error) {
	if !s.started {
		s.started = true
		s.w.Header().Set("Content-Type", "application/x-tar")
	}
	return s.w.Write(p)
}
