package httpapi

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/httpx"
	"github.com/prsaga/prsaga/services/notifier"
	"github.com/prsaga/prsaga/services/notifier/webhook"
)

// MaxWatchers bounds the watchers of one repository.
const MaxWatchers = 100

// watcherIn is one entry of PUT .../watchers.
type watcherIn struct {
	URL    string `json:"url"`
	Secret string `json:"secret"`
}

// watcherOut shows a watcher without its secrets: id and host only.
type watcherOut struct {
	ID   string `json:"id"`
	Host string `json:"host"`
}

func repoOf(r *http.Request) (string, error) {
	repo := r.PathValue("owner") + "/" + r.PathValue("name")
	if err := contracts.ValidateRepo(repo); err != nil {
		return "", httpx.Errorf(http.StatusBadRequest, "%s", err)
	}
	return repo, nil
}

func (a *API) putWatchers(w http.ResponseWriter, r *http.Request) {
	repo, err := repoOf(r)
	if err != nil {
		httpx.WriteError(w, err)
		return
	}
	var in []watcherIn
	if err := httpx.DecodeJSON(w, r, &in); err != nil {
		httpx.WriteError(w, err)
		return
	}
	if len(in) > MaxWatchers {
		httpx.WriteError(w, httpx.Errorf(http.StatusBadRequest, "at most %d watchers per repository, got %d", MaxWatchers, len(in)))
		return
	}
	ws := make([]notifier.Watcher, 0, len(in))
	seen := map[string]bool{}
	for i, x := range in {
		if err := webhook.ValidateURL(x.URL); err != nil {
			httpx.WriteError(w, httpx.Errorf(http.StatusBadRequest, "watcher %d: %s", i, err))
			return
		}
		if !a.AllowPrivate {
			if err := webhook.CheckPublic(r.Context(), x.URL, a.LookupIP); err != nil {
				httpx.WriteError(w, httpx.Errorf(http.StatusBadRequest, "watcher %d: %s", i, err))
				return
			}
		}
		if len(x.Secret) < 8 || len(x.Secret) > 256 {
			httpx.WriteError(w, httpx.Errorf(http.StatusBadRequest, "watcher %d: secret must be 8 to 256 bytes", i))
			return
		}
		id := notifier.WatcherID(repo, x.URL)
		if seen[id] {
			httpx.WriteError(w, httpx.Errorf(http.StatusBadRequest, "watcher %d: the same URL is listed twice", i))
			return
		}
		seen[id] = true
		ws = append(ws, notifier.Watcher{ID: id, Repo: repo, URL: x.URL, Secret: x.Secret})
	}
	if err := a.Store.ReplaceWatchers(r.Context(), repo, ws); err != nil {
		a.fail(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, view(ws))
}

func (a *API) getWatchers(w http.ResponseWriter, r *http.Request) {
	repo, err := repoOf(r)
	if err != nil {
		httpx.WriteError(w, err)
		return
	}
	ws, err := a.Store.Watchers(r.Context(), repo)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, view(ws))
}

func view(ws []notifier.Watcher) []watcherOut {
	out := make([]watcherOut, 0, len(ws))
	for _, w := range ws {
		host := ""
		if u, err := url.Parse(w.URL); err == nil {
			host = u.Host
		}
		out = append(out, watcherOut{ID: w.ID, Host: host})
	}
	return out
}

// fail answers err; an internal error (no *httpx.Error) is logged, the
// client sees only "internal error".
func (a *API) fail(w http.ResponseWriter, r *http.Request, err error) {
	var e *httpx.Error
	if !errors.As(err, &e) && a.Log != nil {
		a.Log.ErrorContext(r.Context(), "http request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	httpx.WriteError(w, err)
}
