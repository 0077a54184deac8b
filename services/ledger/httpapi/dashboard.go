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
	"confirm":   parsePage("confirm.html"),
	"failed":    parsePage("failed.html"),
	"bulkretry": parsePage("bulkretry.html"),
	"bulkjob":   parsePage("bulkjob.html"),
	"login":     parsePage("login.html"),
	"error":     parsePage("error.html"),
}

func parsePage(name string) *template.Template {
	funcs := template.FuncMap{
		"pathEscape": url.PathEscape,
		"fmtTime":    func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
		"fmtClock":   func(t time.Time) string { return t.UTC().Format("15:04:05.000") },
	}
	return template.Must(template.New(name).Funcs(funcs).ParseFS(templateFiles, "templates/layout.html", "templates/part_*.html", "templates/"+name))
}

// frame is what the layout of every page shows.
type frame struct {
	Title   string
	Now     string
	Refresh bool   // reload every 5 seconds (not on pages with a form)
	Login   string // "" or the href of the login page, when tokens guard forms
	Actor   string // who is logged in, when tokens guard forms
}

func (a *API) frame(r *http.Request, title string, refresh bool) frame {
	f := frame{Title: title, Now: a.now().UTC().Format(time.RFC3339), Refresh: refresh}
	if a.readGuarded() {
		if acc := a.accessOf(r); acc.view {
			f.Actor = acc.name
		} else {
			f.Login = "/login?next=" + url.QueryEscape(r.URL.RequestURI())
		}
	}
	return f
}

type filterLink struct {
	Label, Href string
	Count       int
	On          bool
}

type stepRow struct {
	State    contracts.State
	Count    int
	P50, P99 string
}

type dashboardPage struct {
	frame
	State   contracts.State
	Repo    string
	Stuck   bool
	States  []contracts.State
	Filters []filterLink
	Sagas   []ledger.Saga
	Next    string
	Steps   []stepRow
	Window  ledger.StepWindow
	DLQ     *uint64
	// Overview is the pipeline picture and the charts (overview.go).
	Overview overview
}

// dashboard shows counts per state and step durations, and lists sagas,
// newest activity first, filtered by state, repo and stuck.
func (a *API) dashboard(w http.ResponseWriter, r *http.Request) {
	f, page, err := a.list(r)
	if err != nil {
		a.failPage(w, r, err)
		return
	}
	st, err := a.statsWithDLQ(r.Context())
	if err != nil {
		a.failPage(w, r, err)
		return
	}
	ov, err := a.overview(r.Context(), st, f.State, r.URL.Query().Get("range"), a.now())
	if err != nil {
		a.failPage(w, r, err)
		return
	}
	p := dashboardPage{Overview: ov, frame: a.frame(r, "Sagas", true), State: f.State, Repo: f.Repo, Stuck: f.Stuck,
		States: contracts.States, Sagas: page.Sagas, Window: st.Window, DLQ: st.DLQMessages}
	stuck := ""
	if f.Stuck {
		stuck = "true"
	}
	p.Filters = append(p.Filters, filterLink{Label: "all", Href: "/" + query(url.Values{"repo": {f.Repo}, "stuck": {stuck}}), Count: st.Total, On: f.State == ""})
	for _, s := range contracts.States {
		q := url.Values{"state": {string(s)}, "repo": {f.Repo}, "stuck": {stuck}}
		p.Filters = append(p.Filters, filterLink{Label: string(s), Href: "/" + query(q), Count: st.States[s], On: f.State == s})
	}
	for _, s := range contracts.Steps {
		ss := st.Steps[s]
		p.Steps = append(p.Steps, stepRow{State: s, Count: ss.Count,
			P50: (time.Duration(ss.P50Ms) * time.Millisecond).String(), P99: (time.Duration(ss.P99Ms) * time.Millisecond).String()})
	}
	if page.NextCursor != "" {
		q := url.Values{"state": {string(f.State)}, "repo": {f.Repo}, "stuck": {stuck}, "cursor": {page.NextCursor}}
		if r.URL.Query().Get("limit") != "" {
			q.Set("limit", strconv.Itoa(f.Limit))
		}
		p.Next = "/" + query(q)
	}
	a.render(w, r, http.StatusOK, "dashboard", p)
}

type errorPage struct {
	frame
	Message string
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
	case errors.Is(err, ledger.ErrKeyReused): // as the API's fail answers it
		status, msg = http.StatusUnprocessableEntity, "This form was already used to retry another saga: reload the page and try again."
	case errors.Is(err, contracts.ErrInvalid):
		status, msg = http.StatusBadRequest, oneLine(err.Error())
	default:
		a.log().ErrorContext(r.Context(), "page failed", "path", r.URL.Path, "err", err)
	}
	a.render(w, r, status, "error", errorPage{frame: a.frame(r, http.StatusText(status), false), Message: msg})
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
