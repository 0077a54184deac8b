package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/httpx"
	"github.com/prsaga/prsaga/services/validator"
)

// Store is what the routes need of the validator's tables; the server
// passes the *validator.Validator, which stamps and writes them.
type Store interface {
	// SetStatus records st as the latest status of its context on
	// repo@sha and returns it as stored (with its time).
	SetStatus(ctx context.Context, repo, sha string, st validator.Status) (validator.Status, error)
	// Statuses lists the latest status of every context of repo@sha.
	Statuses(ctx context.Context, repo, sha string) ([]validator.Status, error)
	// SetProtection replaces the required contexts of repo's branch.
	SetProtection(ctx context.Context, repo, branch string, contexts []string) error
	// Protection returns them; ok is false when none are configured.
	Protection(ctx context.Context, repo, branch string) (contexts []string, ok bool, err error)
}

// API is the validator's HTTP routes.
type API struct {
	Store Store
	// DefaultRequired applies to branches without configured protection.
	DefaultRequired []string
	// OperatorTokens may call every mutating route; StatusTokens (CI
	// systems) may post statuses. Empty: open to every caller.
	OperatorTokens, StatusTokens httpx.Tokens
	// ReadTokens may call the read routes, as OperatorTokens may; none of
	// either set: reads are open (loopback only, checked by the server).
	ReadTokens httpx.Tokens
	// Log receives internal errors (the client sees only "internal error").
	Log *slog.Logger
}

// Routes registers the API on mux (Go 1.22 patterns). Branch names contain
// "/", so protection takes the rest of the path.
func (a *API) Routes(mux *http.ServeMux) {
	// A status token or an operator token may post statuses; with neither
	// configured the route is open (loopback only, checked by the server).
	posters := append(append(httpx.Tokens{}, a.StatusTokens...), a.OperatorTokens...)
	mux.HandleFunc("POST /api/v1/repos/{owner}/{name}/statuses/{sha}", posters.RequireWith(httpx.StatusRefusal, a.postStatus))
	readers := append(append(httpx.Tokens{}, a.ReadTokens...), a.OperatorTokens...)
	mux.HandleFunc("GET /api/v1/repos/{owner}/{name}/statuses/{sha}", readers.RequireRead(a.getStatuses))
	mux.HandleFunc("PUT /api/v1/repos/{owner}/{name}/protection/{branch...}", a.OperatorTokens.Require(a.putProtection))
	mux.HandleFunc("GET /api/v1/repos/{owner}/{name}/protection/{branch...}", readers.RequireRead(a.getProtection))
}

// repoOf validates the {owner}/{name} of a path.
func repoOf(r *http.Request) (string, error) {
	repo := r.PathValue("owner") + "/" + r.PathValue("name")
	if err := contracts.ValidateRepo(repo); err != nil {
		return "", httpx.Errorf(http.StatusBadRequest, "%s", err)
	}
	return repo, nil
}

// repoAnd returns the request's repository and its path value key, checked
// by validate (a bad one is the client's error, 400).
func repoAnd(r *http.Request, key string, validate func(field, v string) error) (repo, v string, err error) {
	if repo, err = repoOf(r); err != nil {
		return "", "", err
	}
	v = r.PathValue(key)
	if err := validate(key, v); err != nil {
		return "", "", httpx.Errorf(http.StatusBadRequest, "%s", err)
	}
	return repo, v, nil
}

// decodeWrite checks a write's path values with ids, then decodes its JSON
// body into in; ok is false when the error has been answered.
func (a *API) decodeWrite(w http.ResponseWriter, r *http.Request, ids func(*http.Request) (string, string, error), in any) (repo, id string, ok bool) {
	repo, id, err := ids(r)
	if err == nil {
		err = httpx.DecodeJSON(w, r, in)
	}
	if err != nil {
		a.fail(w, r, err)
		return "", "", false
	}
	return repo, id, true
}

func (a *API) fail(w http.ResponseWriter, r *http.Request, err error) {
	var e *httpx.Error
	if !errors.As(err, &e) && a.Log != nil {
		a.Log.ErrorContext(r.Context(), "http request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	httpx.WriteError(w, err)
}
