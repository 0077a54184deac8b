package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/httpx"
	"github.com/prsaga/prsaga/services/ledger"
)

// Sagas is the read side the API serves. Implementations are safe for
// concurrent use and validate filters themselves too.
type Sagas interface {
	// List returns one page of sagas.
	List(ctx context.Context, f ledger.Filter) (ledger.Page, error)
	// Get returns a saga with its transitions, or ledger.ErrNotFound.
	Get(ctx context.Context, prID string) (ledger.Saga, error)
	// Events lists the events recorded for a PR, oldest first.
	Events(ctx context.Context, prID string) ([]ledger.Event, error)
	// Stats counts sagas per state.
	Stats(ctx context.Context) (ledger.Stats, error)
}

// Outbox publishes events reliably: it returns once they are committed to
// the ledger's outbox, from which the relay publishes them.
type Outbox interface {
	Emit(ctx context.Context, evs ...*event.Event) error
}

// API serves the ledger's routes. Set its fields before Routes; it is safe
// for concurrent use after that.
type API struct {
	Sagas  Sagas
	Outbox Outbox
	// Tokens guard the mutating routes (operator tokens); none configured
	// lets every caller through.
	Tokens httpx.Tokens
	Now    func() time.Time // default time.Now
	NewID  func() string    // ids of requested events; required
	Log    *slog.Logger     // internal errors; default: discarded
}

// Routes registers the ledger's routes on mux.
func (a *API) Routes(mux *http.ServeMux) {
	// The mux matches the escaped path, so an escaped "/" inside {pr} stays
	// in one segment; PathValue returns it unescaped.
	mux.HandleFunc("GET /api/v1/sagas", a.listSagas)
	mux.HandleFunc("GET /api/v1/sagas/{pr}", a.getSaga)
	mux.HandleFunc("GET /api/v1/sagas/{pr}/events", a.sagaEvents)
	mux.HandleFunc("GET /api/v1/sagas/{rest...}", a.unescapedPR)
	mux.HandleFunc("GET /api/v1/stats", a.stats)
	mux.HandleFunc("POST /api/v1/merge-requests", a.Tokens.Require(a.postMergeRequest))
	mux.HandleFunc("GET /{$}", a.dashboard)
	mux.HandleFunc("GET /sagas/{pr}", a.timeline)
}

func (a *API) listSagas(w http.ResponseWriter, r *http.Request) {
	f, err := filterOf(r)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	page, err := a.Sagas.List(r.Context(), f)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, page)
}

func (a *API) getSaga(w http.ResponseWriter, r *http.Request) {
	pr, err := prOf(r)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	s, err := a.Sagas.Get(r.Context(), pr)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, s)
}

func (a *API) sagaEvents(w http.ResponseWriter, r *http.Request) {
	pr, err := prOf(r)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	// An unknown PR is a 404, not an empty list: a typo should say so.
	if _, err := a.Sagas.Get(r.Context(), pr); err != nil {
		a.fail(w, r, err)
		return
	}
	evs, err := a.Sagas.Events(r.Context(), pr)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"pr_id": pr, "events": evs})
}

// unescapedPR answers paths whose PR id was not escaped as one segment.
func (a *API) unescapedPR(w http.ResponseWriter, r *http.Request) {
	a.fail(w, r, httpx.Errorf(http.StatusBadRequest,
		"%q is not a saga path: escape the PR id as one path segment, e.g. /api/v1/sagas/acme%%2Fwidgets%%2342",
		truncate(r.PathValue("rest"))))
}

func (a *API) stats(w http.ResponseWriter, r *http.Request) {
	st, err := a.Sagas.Stats(r.Context())
	if err != nil {
		a.fail(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, st)
}

// prOf reads and validates the {pr} path value.
func prOf(r *http.Request) (string, error) {
	pr := r.PathValue("pr")
	if _, _, err := contracts.ParsePRID(pr); err != nil {
		return "", err
	}
	return pr, nil
}

// filterOf reads and validates ?state=&repo=&limit=&cursor=.
func filterOf(r *http.Request) (ledger.Filter, error) {
	q := r.URL.Query()
	var f ledger.Filter
	var errs []error
	if s := q.Get("state"); s != "" {
		st, err := contracts.ParseState(s)
		errs = append(errs, err)
		f.State = st
	}
	if repo := q.Get("repo"); repo != "" {
		errs = append(errs, contracts.ValidateRepo(repo))
		f.Repo = repo
	}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 {
			errs = append(errs, &contracts.FieldError{Field: "limit", Problem: "must be a positive integer (at most " + strconv.Itoa(ledger.MaxLimit) + ")"})
		}
		f.Limit = n
	}
	if c := q.Get("cursor"); c != "" {
		cur, err := ledger.ParseCursor(c)
		if err != nil {
			errs = append(errs, &contracts.FieldError{Field: "cursor", Problem: "is not one this API handed out"})
		}
		f.After = &cur
	}
	return f.WithDefaults(), errors.Join(errs...)
}

// fail answers err: the one place domain errors become statuses.
func (a *API) fail(w http.ResponseWriter, r *http.Request, err error) {
	var he *httpx.Error
	var inv invalid
	switch {
	case errors.As(err, &inv):
		writeInvalid(w, inv.summary, inv.err)
	case errors.As(err, &he):
		httpx.WriteError(w, he)
	case errors.Is(err, ledger.ErrNotFound):
		httpx.WriteJSON(w, http.StatusNotFound, map[string]string{"error": "no saga for " + truncate(r.PathValue("pr"))})
	case errors.Is(err, contracts.ErrInvalid), errors.Is(err, ledger.ErrBadCursor):
		writeInvalid(w, "", err)
	default:
		a.log().ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		httpx.WriteError(w, err)
	}
}

// fieldProblem is one invalid field of a request.
type fieldProblem struct {
	Field   string `json:"field"`
	Problem string `json:"problem"`
}

// writeInvalid answers 400 naming every bad field: {"error": "...", "fields": [...]}.
func writeInvalid(w http.ResponseWriter, prefix string, err error) {
	var fields []fieldProblem
	var msgs []string
	for _, e := range flatten(err) {
		msgs = append(msgs, e.Error())
		var fe *contracts.FieldError
		if errors.As(e, &fe) {
			fields = append(fields, fieldProblem{Field: fe.Field, Problem: fe.Problem})
		}
	}
	msg := strings.Join(msgs, "; ")
	if prefix != "" {
		msg = prefix + ": " + msg
	}
	body := map[string]any{"error": msg}
	if len(fields) > 0 {
		body["fields"] = fields
	}
	httpx.WriteJSON(w, http.StatusBadRequest, body)
}

// flatten lists the leaves of a tree of joined errors.
func flatten(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}

func (a *API) log() *slog.Logger {
	if a.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return a.Log
}

func (a *API) now() time.Time {
	if a.Now == nil {
		return time.Now()
	}
	return a.Now()
}

// truncate keeps hostile input in error messages short.
func truncate(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
