package httpapi

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/services/ledger"
)

// The dashboard's bulk retry (design §6): GET /failed lists the failed
// sagas a filter selects (ledger.SelectFailed, as POST /api/v1/retries
// and prsaga retry --all select them); GET /failed/retry shows the dry run
// of ledger.BulkRetry over them with a confirmation form; POST
// /failed/retry starts the job (the API's job machinery) once the
// selection is still the one the operator saw; GET /retries/{id} follows
// the job, POST /retries/{id}/cancel cancels it.

// bulkForm is a bulk retry's filter as the dashboard's forms carry it: as
// typed, so that a form shows what the operator wrote.
type bulkForm struct {
	Step, Repo, Since, Reason, Limit string
	Force                            bool
}

func bulkFormOf(v url.Values) bulkForm {
	return bulkForm{Step: v.Get("step"), Repo: v.Get("repo"), Since: v.Get("since"), Reason: v.Get("reason"),
		Limit: v.Get("limit"), Force: v.Get("force") != ""}
}

// query is the form as a query string ("" or "?...").
func (f bulkForm) query() string {
	force := ""
	if f.Force {
		force = "true"
	}
	return query(url.Values{"step": {f.Step}, "repo": {f.Repo}, "since": {f.Since}, "reason": {f.Reason}, "limit": {f.Limit}, "force": {force}})
}

// filter reads the form into the filter, validated; a relative since
// ("2h") is resolved against now, so that the confirmation carries the
// same instant as the dry run it confirms.
func (f bulkForm) filter(now time.Time) (ledger.BulkFilter, error) {
	bf := ledger.BulkFilter{Step: contracts.State(strings.TrimSpace(f.Step)), Repo: strings.TrimSpace(f.Repo), Reason: f.Reason}
	var errs []error
	if s := strings.TrimSpace(f.Since); s != "" {
		if d, err := time.ParseDuration(s); err == nil && d > 0 {
			bf.Since = now.Add(-d)
		} else if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			bf.Since = t
		} else {
			errs = append(errs, &contracts.FieldError{Field: "since", Problem: "must be a duration back from now (2h, 30m) or an RFC 3339 time"})
		}
	}
	if l := strings.TrimSpace(f.Limit); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil {
			errs = append(errs, &contracts.FieldError{Field: "limit", Problem: "must be a whole number"})
		}
		bf.Limit = n
	}
	if err := errors.Join(errs...); err != nil {
		return bf, err
	}
	_, err := bf.Validate()
	return bf, err
}

// rateOf reads the confirmation's rate: replays per second, "" or 0 for
// no limit.
func rateOf(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	r, err := strconv.ParseFloat(s, 64)
	if err != nil || r < 0 || math.IsInf(r, 0) || math.IsNaN(r) {
		return 0, &contracts.FieldError{Field: "rate", Problem: "must be a number of replays per second, 0 or more"}
	}
	return r, nil
}

// fingerprint names a selection: the filter and, in order, each saga's
// failed attempt. The confirmation carries the fingerprint of the dry run
// it was shown with; a different one at confirm time means the operator
// did not see what would be replayed.
func fingerprint(f ledger.BulkFilter, force bool, sagas []ledger.Saga) string {
	h := sha256.New()
	since := ""
	if !f.Since.IsZero() {
		since = f.Since.UTC().Format(time.RFC3339Nano)
	}
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00%d\x00%t\n", f.Step, f.Repo, since, f.Reason, f.Limit, force)
	for _, s := range sagas {
		fmt.Fprintf(h, "%s\x00%d\x00%s\n", s.PRID, s.Attempts, s.FailedStep)
	}
	return hex.EncodeToString(h.Sum(nil))
}

type failedPage struct {
	frame
	Form         bulkForm
	FilterAction string
	Steps        []contracts.State
	Sagas        []ledger.Saga
	CanRetry     bool
	RetryHref    string
	Message      string
}

// failedList lists the failed sagas a bulk retry filter selects, with the
// "Retry these…" button for operators.
func (a *API) failedList(w http.ResponseWriter, r *http.Request) {
	form := bulkFormOf(r.URL.Query())
	p := failedPage{frame: a.frame(r, "Failed sagas", false), Form: form, FilterAction: "/failed", Steps: contracts.Steps,
		CanRetry: a.accessOf(r).act, RetryHref: "/failed/retry" + form.query()}
	f, err := form.filter(a.now())
	if err != nil {
		p.Message = oneLine(err.Error())
		a.render(w, r, http.StatusBadRequest, "failed", p)
		return
	}
	if p.Sagas, err = ledger.SelectFailed(r.Context(), a.Sagas, f); err != nil {
		a.failPage(w, r, err)
		return
	}
	a.render(w, r, http.StatusOK, "failed", p)
}

type bulkConfirmPage struct {
	frame
	Form         bulkForm // the filter form, as typed
	FilterAction string
	Steps        []contracts.State
	Since        string // the filter's since, resolved (RFC 3339), or ""
	Limit        int
	DryRun       ledger.BulkReport
	Fingerprint  string
	CSRF, Key    string
	Rate         string
	BackHref     string
	Message      string // why the confirmation was not carried out
}

// confirmBulk is the "Retry these…" page: the dry run of the bulk retry
// and a form to go ahead. Reading it changes nothing.
func (a *API) confirmBulk(w http.ResponseWriter, r *http.Request) {
	if !a.accessOf(r).act {
		a.failPage(w, r, errViewOnly)
		return
	}
	form := bulkFormOf(r.URL.Query())
	f, sagas, ok := a.selectBulk(w, r, form)
	if !ok {
		return
	}
	a.renderBulkConfirm(w, r, form, f, sagas, "", http.StatusOK, "")
}

// selectBulk selects the failed sagas form's filter names, as of now;
// when it cannot, it answers with the error page.
func (a *API) selectBulk(w http.ResponseWriter, r *http.Request, form bulkForm) (ledger.BulkFilter, []ledger.Saga, bool) {
	f, err := form.filter(a.now())
	if err != nil {
		a.failPage(w, r, err)
		return f, nil, false
	}
	sagas, err := ledger.SelectFailed(r.Context(), a.Sagas, f)
	if err != nil {
		a.failPage(w, r, err)
		return f, nil, false
	}
	return f, sagas, true
}

// renderBulkConfirm shows the dry run of the same code the job runs
// (ledger.BulkRetry) over the sagas selected.
func (a *API) renderBulkConfirm(w http.ResponseWriter, r *http.Request, form bulkForm, f ledger.BulkFilter, sagas []ledger.Saga, rate string, status int, msg string) {
	dry := ledger.BulkRetry(r.Context(), a.Retrier, sagas, ledger.BulkRequest{BulkFilter: f, DryRun: true, Force: form.Force, Actor: "dashboard"}, nil)
	p := bulkConfirmPage{frame: a.frame(r, "Retry failed sagas", false), Form: form, FilterAction: "/failed/retry", Steps: contracts.Steps, Limit: f.Limit,
		DryRun: dry, Fingerprint: fingerprint(f, form.Force, sagas), CSRF: a.csrfToken(w, r), Key: "dash-bulk-" + randomHex(16),
		Rate: rate, BackHref: "/failed" + form.query(), Message: msg}
	if !f.Since.IsZero() {
		p.Since = f.Since.UTC().Format(time.RFC3339Nano)
	}
	a.render(w, r, status, "bulkretry", p)
}

// formBulk is the confirmation's post: checked like every dashboard form,
// then the selection is made again and compared with the one the dry run
// showed. The same: the job starts on exactly those sagas and the browser
// goes to its page. Changed: nothing is replayed, the new dry run is shown.
func (a *API) formBulk(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	actor, err := a.checkForm(r, true)
	form := bulkFormOf(r.PostForm)
	if errors.Is(err, errNeedLogin) {
		http.Redirect(w, r, "/login?next="+url.QueryEscape("/failed/retry"+form.query()), http.StatusSeeOther)
		return
	}
	if err != nil {
		a.failPage(w, r, err)
		return
	}
	key := r.PostFormValue("key")
	if err := validKey(key); err != nil || key == "" {
		a.failPage(w, r, &contracts.FieldError{Field: "key", Problem: "is missing or not printable ASCII: reload the page and try again"})
		return
	}
	// A double submit goes to the job the first one started. (Two at the
	// same instant may both start one: each saga's Idempotency-Key still
	// replays it once.)
	if j, ok := a.bulkJobs().byFormKey(key); ok {
		http.Redirect(w, r, "/retries/"+url.PathEscape(j.id), http.StatusSeeOther)
		return
	}
	f, sagas, ok := a.selectBulk(w, r, form)
	if !ok {
		return
	}
	rate, err := rateOf(r.PostFormValue("rate"))
	if err != nil {
		a.failPage(w, r, err)
		return
	}
	if fingerprint(f, form.Force, sagas) != r.PostFormValue("fingerprint") {
		shown, _ := strconv.Atoi(r.PostFormValue("count"))
		a.renderBulkConfirm(w, r, form, f, sagas, r.PostFormValue("rate"), http.StatusConflict, fmt.Sprintf(
			"The failed sagas this filter selects changed since the dry run you confirmed (%d then, %d now): nothing was replayed. This is the new dry run; confirm it if it is what you mean.",
			shown, len(sagas)))
		return
	}
	j := a.startBulk(r.Context(), sagas, ledger.BulkRequest{BulkFilter: f, Force: form.Force, Rate: rate, Actor: actor}, key)
	a.log().Info("bulk retry started from the dashboard", "job", j.id, "actor", actor, "matched", len(sagas), "rate", rate)
	http.Redirect(w, r, "/retries/"+url.PathEscape(j.id), http.StatusSeeOther)
}

type bulkJobPage struct {
	frame
	ID        string
	Created   time.Time
	Report    ledger.BulkReport
	CanCancel bool
	CSRF      string
}

// bulkJobPage follows a bulk retry: progress while it runs (the page
// reloads itself), the summary once it ended.
func (a *API) bulkJob(w http.ResponseWriter, r *http.Request) {
	j, ok := a.bulkJobs().get(r.PathValue("id"))
	if !ok {
		a.failPage(w, r, errJobNotFound)
		return
	}
	rep := j.report()
	p := bulkJobPage{frame: a.frame(r, "Bulk retry", !rep.Finished), ID: j.id, Created: j.created, Report: rep,
		CanCancel: !rep.Finished && a.accessOf(r).act}
	if p.CanCancel {
		p.CSRF = a.csrfToken(w, r)
	}
	a.render(w, r, http.StatusOK, "bulkjob", p)
}

// cancelBulk is the job page's cancel button: the saga being retried
// finishes, no further one starts (as DELETE /api/v1/retries/{id}).
func (a *API) cancelBulk(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	actor, err := a.checkForm(r, true)
	if errors.Is(err, errNeedLogin) {
		http.Redirect(w, r, "/login?next="+url.QueryEscape("/retries/"+url.PathEscape(id)), http.StatusSeeOther)
		return
	}
	if err != nil {
		a.failPage(w, r, err)
		return
	}
	j, ok := a.bulkJobs().get(id)
	if !ok {
		a.failPage(w, r, errJobNotFound)
		return
	}
	j.stop(r.Context())
	a.log().Info("bulk retry cancelled from the dashboard", "job", j.id, "actor", actor)
	http.Redirect(w, r, "/retries/"+url.PathEscape(j.id), http.StatusSeeOther)
}
