package httpapi

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/prsaga/prsaga/platform/httpx"
	"github.com/prsaga/prsaga/services/notifier"
	"github.com/prsaga/prsaga/services/notifier/webhook"
)

// Store is what the routes need of the notifier's tables. Safe for
// concurrent use.
type Store interface {
	// Watchers lists a repository's watchers, by id.
	Watchers(ctx context.Context, repo string) ([]notifier.Watcher, error)
	// ReplaceWatchers sets a repository's watchers, in one transaction.
	ReplaceWatchers(ctx context.Context, repo string, ws []notifier.Watcher) error
}

// API is the notifier's HTTP routes. Set its fields before Routes; it is
// safe for concurrent use after that.
type API struct {
	Store Store
	// AllowPrivate lets a watcher's host resolve to a private address
	// (tests and local demos only).
	AllowPrivate bool
	// OperatorTokens may replace watchers. Empty: open (loopback only,
	// checked by the server).
	OperatorTokens httpx.Tokens
	// ReadTokens may list watchers, as OperatorTokens may; none of either
	// set: the list is open (loopback only).
	ReadTokens httpx.Tokens
	// LookupIP resolves a watcher's host name when it is put
	// (webhook.CheckPublic); nil: the system resolver.
	LookupIP webhook.LookupIP
	// Log receives internal errors (the client sees only "internal error");
	// nil: discarded.
	Log *slog.Logger
}

// Routes adds PUT and GET /api/v1/repos/{owner}/{name}/watchers.
func (a *API) Routes(mux *http.ServeMux) {
	mux.HandleFunc("PUT /api/v1/repos/{owner}/{name}/watchers", a.OperatorTokens.Require(a.putWatchers))
	readers := append(append(httpx.Tokens{}, a.ReadTokens...), a.OperatorTokens...)
	mux.HandleFunc("GET /api/v1/repos/{owner}/{name}/watchers", readers.RequireRead(a.getWatchers))
}
