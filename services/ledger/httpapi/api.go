package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
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
	// Stats counts sagas per state and summarises the step durations of a
	// window of the history.
	Stats(ctx context.Context, w ledger.StepWindow) (ledger.Stats, error)
	// Run returns what the ledger recorded for one correlation id, or
	// ledger.ErrNotFound.
	Run(ctx context.Context, correlationID string) (ledger.Run, error)
}

// Retrier performs operators' retries (ledger.Retrier).
type Retrier interface {
	Retry(ctx context.Context, req ledger.RetryRequest) (ledger.RetryAnswer, error)
}

// Outbox publishes events reliably: it returns once they are committed to
// the ledger's outbox, from which the relay publishes them.
type Outbox interface {
	Emit(ctx context.Context, evs ...*event.Event) error
}

// API serves the ledger's routes. Set its fields before Routes; it is safe
// for concurrent use after that.
type API struct {
	Sagas   Sagas
	Outbox  Outbox
	Retrier Retrier
	// Tokens guard the mutating routes (operator tokens); none configured
	// lets every caller through (loopback listeners only: the caller checks).
	Tokens httpx.Tokens
	// TokenNames[i] names Tokens[i] in the history ("who retried");
	// default "operator". Without tokens the actor is "local".
	TokenNames []string
	// ReadTokens may read (API and dashboard) but not act; Tokens read
	// too. With any of either configured every read needs one (a bearer
	// token, or on the dashboard a session opened with one).
	ReadTokens httpx.Tokens
	// Timeouts are the watchdog's: they decide what "stuck" means.
	Timeouts ledger.Timeouts
	// DLQ counts dead-lettered messages for stats and the dashboard;
	// optional.
	DLQ func(ctx context.Context) (uint64, error)
	// SessionKey signs the dashboard's cookies and CSRF tokens; default a
	// random key per process (sessions end with it).
	SessionKey []byte
	Now        func() time.Time // default time.Now
	NewID      func() string    // ids of requested events; required
	Log        *slog.Logger     // internal errors; default: discarded

	keyOnce sync.Once
	key     []byte

	jobsOnce sync.Once
	jobs     *jobs // bulk retries (retries.go)
}

// Routes registers the ledger's routes on mux.
func (a *API) Routes(mux *http.ServeMux) {
	// The mux matches the escaped path, so an escaped "/" inside {pr} stays
	// in one segment; PathValue returns it unescaped.
	read := a.readers().RequireRead
	mux.HandleFunc("GET /api/v1/sagas", read(a.listSagas))
	mux.HandleFunc("GET /api/v1/sagas/{pr}", read(a.getSaga))
	mux.HandleFunc("GET /api/v1/sagas/{pr}/events", read(a.sagaEvents))
	mux.HandleFunc("GET /api/v1/sagas/{rest...}", read(a.unescapedPR))
	mux.HandleFunc("POST /api/v1/sagas/{pr}/retry", a.Tokens.Require(a.postRetry))
	mux.HandleFunc("POST /api/v1/retries", a.Tokens.Require(a.postRetries))
	mux.HandleFunc("GET /api/v1/retries/{id}", read(a.getRetries))
	mux.HandleFunc("DELETE /api/v1/retries/{id}", a.Tokens.Require(a.deleteRetries))
	mux.HandleFunc("GET /api/v1/runs/{id}", read(a.getRun))
	mux.HandleFunc("GET /api/v1/stats", read(a.stats))
	mux.HandleFunc("POST /api/v1/merge-requests", a.Tokens.Require(a.postMergeRequest))
	mux.HandleFunc("GET /{$}", a.viewer(a.dashboard))
	mux.HandleFunc("GET /sagas/{pr}", a.viewer(a.timeline))
	mux.HandleFunc("GET /sagas/{pr}/retry", a.viewer(a.confirmRetry))
	mux.HandleFunc("POST /sagas/{pr}/retry", a.formRetry)
	mux.HandleFunc("GET /failed", a.viewer(a.failedList))
	mux.HandleFunc("GET /failed/retry", a.viewer(a.confirmBulk))
	mux.HandleFunc("POST /failed/retry", a.formBulk)
	mux.HandleFunc("GET /retries/{id}", a.viewer(a.bulkJob))
	mux.HandleFunc("POST /retries/{id}/cancel", a.cancelBulk)
	mux.HandleFunc("GET /login", a.loginPage)
	mux.HandleFunc("POST /login", a.login)
}

func (a *API) listSagas(w http.ResponseWriter, r *http.Request) {
	_, page, err := a.list(r)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, page)
}

// list reads the page of sagas the request's filter asks for (the API's
// and the dashboard's), its sagas marked stuck.
func (a *API) list(r *http.Request) (ledger.Filter, ledger.Page, error) {
	f, err := a.filterOf(r)
	if err != nil {
		return f, ledger.Page{}, err
	}
	page, err := a.Sagas.List(r.Context(), f)
	if err != nil {
		return f, ledger.Page{}, err
	}
	a.markStuck(page.Sagas)
	return f, page, nil
}

// sagaOf reads the saga of the PR the request's path names (an unknown PR
// is ledger.ErrNotFound).
func (a *API) sagaOf(r *http.Request) (string, ledger.Saga, error) {
	pr, err := prOf(r)
	if err != nil {
		return "", ledger.Saga{}, err
	}
	s, err := a.Sagas.Get(r.Context(), pr)
	return pr, s, err
}

// sagaEventsOf is sagaOf with the events recorded for the PR.
func (a *API) sagaEventsOf(r *http.Request) (string, ledger.Saga, []ledger.Event, error) {
	pr, s, err := a.sagaOf(r)
	if err != nil {
		return "", ledger.Saga{}, nil, err
	}
	evs, err := a.Sagas.Events(r.Context(), pr)
	return pr, s, evs, err
}

// markStuck sets Saga.Stuck with the watchdog's timeouts.
func (a *API) markStuck(ss []ledger.Saga) {
	now := a.now()
	for i := range ss {
		ss[i].Stuck = a.Timeouts.Stuck(ss[i], now)
	}
}

func (a *API) getSaga(w http.ResponseWriter, r *http.Request) {
	_, s, err := a.sagaOf(r)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	s.Stuck = a.Timeouts.Stuck(s, a.now())
	if s.Merged {
		// Bounded: one run's events (ledger MaxEvents).
		if run, err := a.Sagas.Run(r.Context(), s.CorrelationID); err == nil {
			s.AlreadyMerged = factsOf(run.Events, s.CorrelationID).AlreadyMerged
		}
	}
	httpx.WriteJSON(w, http.StatusOK, s)
}

// getRun answers everything the ledger recorded for one correlation id.
func (a *API) getRun(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if err := contracts.ValidateEventID(id); err != nil {
		a.fail(w, r, err)
		return
	}
	run, err := a.Sagas.Run(r.Context(), id)
	if err != nil {
		if errors.Is(err, ledger.ErrNotFound) {
			a.fail(w, r, httpx.Errorf(http.StatusNotFound, "no saga run %s", truncate(id)))
			return
		}
		a.fail(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, run)
}

func (a *API) sagaEvents(w http.ResponseWriter, r *http.Request) {
	// An unknown PR is a 404, not an empty list: a typo should say so.
	pr, _, evs, err := a.sagaEventsOf(r)
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
	st, err := a.statsWithDLQ(r.Context())
	if err != nil {
		a.fail(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, st)
}

// statsWithDLQ adds the dead-letter count when it can be had: stats
// answer without it rather than fail. Step durations cover the recent
// history only (ledger.RecentSteps), as the answer's steps_window says.
func (a *API) statsWithDLQ(ctx context.Context) (ledger.Stats, error) {
	st, err := a.Sagas.Stats(ctx, ledger.RecentSteps(a.now()))
	if err != nil || a.DLQ == nil {
		return st, err
	}
	if n, err := a.DLQ(ctx); err == nil {
		st.DLQMessages = &n
	} else {
		a.log().WarnContext(ctx, "count dead letters", "err", err)
	}
	return st, nil
}

// prOf reads and validates the {pr} path value.
func prOf(r *http.Request) (string, error) {
	pr := r.PathValue("pr")
	if _, _, err := contracts.ParsePRID(pr); err != nil {
		return "", err
	}
	return pr, nil
}

// filterOf reads and validates ?state=&repo=&stuck=&limit=&cursor=.
func (a *API) filterOf(r *http.Request) (ledger.Filter, error) {
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
	if st := q.Get("stuck"); st != "" {
		b, err := strconv.ParseBool(st)
		if err != nil {
			errs = append(errs, &contracts.FieldError{Field: "stuck", Problem: "must be true or false"})
		}
		if f.Stuck = b; b {
			f.StuckBefore = a.Timeouts.Cutoffs(a.now())
		}
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
