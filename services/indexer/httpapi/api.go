package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/prsaga/prsaga/platform/httpx"
	"github.com/prsaga/prsaga/services/indexer/bleveindex"
)

// Index is what the search route needs of the search index.
type Index interface {
	// Search runs q; an error matching bleveindex.ErrBadQuery is the
	// caller's mistake.
	Search(ctx context.Context, q bleveindex.Query) (bleveindex.Result, error)
	// Ready is nil when the index is open and answers searches, or says
	// why not.
	Ready() error
}

var _ Index = (*bleveindex.Index)(nil)

// API is the indexer's HTTP route.
type API struct {
	Index Index
	// ReadTokens may search (titles and commit messages of private
	// repositories too); none set: the search is open (loopback only,
	// checked by the server).
	ReadTokens httpx.Tokens
	// Log receives the route's internal errors; nil discards them.
	Log *slog.Logger
}

// hitOut is one search hit as the API answers it.
type hitOut struct {
	PRID         string              `json:"pr_id"`
	Repo         string              `json:"repo"`
	Title        string              `json:"title"`
	TargetBranch string              `json:"target_branch"`
	RequestedBy  string              `json:"requested_by"`
	MergeSHA     string              `json:"merge_sha"`
	MergedAt     *time.Time          `json:"merged_at,omitempty"`
	Score        float64             `json:"score"`
	Highlights   map[string][]string `json:"highlights"`
}

// searchOut is the answer of GET /api/v1/search.
type searchOut struct {
	Total uint64   `json:"total"`
	Hits  []hitOut `json:"hits"`
}

// Routes adds GET /api/v1/search?q=&repo=&limit=: q in bleve's query-string
// syntax (bleveindex.Index.Search), repo an exact "owner/name" filter (q
// may then be empty: the repo's PRs, newest merge first), limit 1–1000
// (default 20). Highlights are HTML-escaped fragments with <mark> around
// the matched terms.
func (a *API) Routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/v1/search", a.ReadTokens.RequireRead(a.search))
}

func (a *API) search(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Query()
	q := bleveindex.Query{Text: p.Get("q"), Repo: p.Get("repo")}
	if l := p.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > bleveindex.MaxLimit {
			httpx.WriteError(w, httpx.Errorf(http.StatusBadRequest, "limit %q is not an integer from 1 to %d", clip(l), bleveindex.MaxLimit))
			return
		}
		q.Limit = n
	}
	res, err := a.Index.Search(r.Context(), q)
	switch {
	case errors.Is(err, bleveindex.ErrBadQuery):
		httpx.WriteError(w, httpx.Errorf(http.StatusBadRequest, "%s", err))
		return
	case err != nil && a.Index.Ready() != nil:
		a.log().WarnContext(r.Context(), "search while the index is not open", "err", err)
		httpx.WriteError(w, httpx.Errorf(http.StatusServiceUnavailable, "the search index is not available"))
		return
	case err != nil:
		a.log().ErrorContext(r.Context(), "search failed", "err", err)
		httpx.WriteError(w, err)
		return
	}
	out := searchOut{Total: res.Total, Hits: make([]hitOut, 0, len(res.Hits))}
	for _, h := range res.Hits {
		o := hitOut{
			PRID: h.PRID, Repo: h.Repo, Title: h.Title, TargetBranch: h.TargetBranch,
			RequestedBy: h.RequestedBy, MergeSHA: h.MergeSHA, Score: h.Score, Highlights: h.Highlights,
		}
		if !h.MergedAt.IsZero() {
			at := h.MergedAt
			o.MergedAt = &at
		}
		out.Hits = append(out.Hits, o)
	}
	httpx.WriteJSON(w, http.StatusOK, out)
}

func (a *API) log() *slog.Logger {
	if a.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return a.Log
}

// clip keeps a hostile parameter out of an error message beyond 40 bytes.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
