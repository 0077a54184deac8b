package httpapi

import (
	"bytes"
	"embed"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/httpx"
	"github.com/prsaga/prsaga/services/ledger"
)

//go:embed templates/*.html
var templateFiles embed.FS

// pages are parsed once; html/template escapes every value by context.
var pages = map[string]*template.Template{
	"dashboard": parsePage("dashboard.html"),
	"timeline":  parsePage("timeline.html"),
	"error":     parsePage("error.html"),
}

func parsePage(name string) *template.Template {
	funcs := template.FuncMap{
		"pathEscape": url.PathEscape,
		"fmtTime":    func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
	}
	return template.Must(template.New(name).Funcs(funcs).ParseFS(templateFiles, "templates/layout.html", "templates/"+name))
}

type filterLink struct {
	Label, Href string
	Count       int
	On          bool
}

type dashboardPage struct {
	Title   string
	Now     string
	State   contracts.State
	Filters []filterLink
	Sagas   []ledger.Saga
	Next    string
}

// dashboard lists sagas, newest activity first, with a link per state.
func (a *API) dashboard(w http.ResponseWriter, r *http.Request) {
	f, err := filterOf(r)
	if err != nil {
		a.failPage(w, r, err)
		return
	}
	st, err := a.Sagas.Stats(r.Context())
	if err != nil {
		a.failPage(w, r, err)
		return
	}
	page, err := a.Sagas.List(r.Context(), f)
	if err != nil {
		a.failPage(w, r, err)
		return
	}
	p := dashboardPage{Title: "Sagas", Now: a.now().UTC().Format(time.RFC3339), State: f.State, Sagas: page.Sagas}
	p.Filters = append(p.Filters, filterLink{Label: "all", Href: "/" + query(url.Values{"repo": {f.Repo}}), Count: st.Total, On: f.State == ""})
	for _, s := range contracts.States {
		q := url.Values{"state": {string(s)}, "repo": {f.Repo}}
		p.Filters = append(p.Filters, filterLink{Label: string(s), Href: "/" + query(q), Count: st.States[s], On: f.State == s})
	}
	if page.NextCursor != "" {
		q := url.Values{"state": {string(f.State)}, "repo": {f.Repo}, "cursor": {page.NextCursor}}
		if r.URL.Query().Get("limit") != "" {
			q.Set("limit", strconv.Itoa(f.Limit))
		}
		p.Next = "/" + query(q)
	}
	a.render(w, r, http.StatusOK, "dashboard", p)
}

type timelinePage struct {
	Title  string
	Now    string
	Saga   ledger.Saga
	Events []ledger.Event
}

// timeline shows one PR's saga: its row, transitions and events.
func (a *API) timeline(w http.ResponseWriter, r *http.Request) {
	pr, err := prOf(r)
	if err != nil {
		a.failPage(w, r, err)
		return
	}
	s, err := a.Sagas.Get(r.Context(), pr)
	if err != nil {
		a.failPage(w, r, err)
		return
	}
	evs, err := a.Sagas.Events(r.Context(), pr)
	if err != nil {
		a.failPage(w, r, err)
		return
	}
	a.render(w, r, http.StatusOK, "timeline", timelinePage{Title: pr, Now: a.now().UTC().Format(time.RFC3339), Saga: s, Events: evs})
}

type errorPage struct {
	Title, Message, Now string
}

// failPage is fail for the HTML pages.
func (a *API) failPage(w http.ResponseWriter, r *http.Request, err error) {
	status, msg := http.StatusInternalServerError, "internal error"
	var he *httpx.Error
	switch {
	case errors.As(err, &he):
		status, msg = he.Status, he.Message
	case errors.Is(err, ledger.ErrNotFound):
		status, msg = http.StatusNotFound, "No saga for "+truncate(r.PathValue("pr"))+"."
	case errors.Is(err, contracts.ErrInvalid):
		status, msg = http.StatusBadRequest, oneLine(err.Error())
	default:
		a.log().ErrorContext(r.Context(), "page failed", "path", r.URL.Path, "err", err)
	}
	a.render(w, r, status, "error", errorPage{Title: http.StatusText(status), Message: msg, Now: a.now().UTC().Format(time.RFC3339)})
}

func (a *API) render(w http.ResponseWriter, r *http.Request, status int, name string, data any) {
	// Render first: a failing template must not leave half a page.
	var buf bytes.Buffer
	if err := pages[name].ExecuteTemplate(&buf, name+".html", data); err != nil {
		a.log().ErrorContext(r.Context(), "render page", "page", name, "err", err)
		httpx.WriteError(w, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// query encodes the non-empty values as "?a=b&...", or "".
func query(v url.Values) string {
	for k, vs := range v {
		if len(vs) == 0 || vs[0] == "" {
			delete(v, k)
		}
	}
	if len(v) == 0 {
		return ""
	}
	return "?" + v.Encode()
}
