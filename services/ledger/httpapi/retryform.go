package httpapi

import (
	"errors"
	"net/http"
	"net/url"

	"github.com/prsaga/prsaga/services/ledger"
)

// confirmPage asks before a retry, showing what it would send.
type confirmPage struct {
	frame
	PR      string
	Answer  ledger.RetryAnswer // a dry run
	CSRF    string
	Key     string // Idempotency-Key of this form: a double submit retries once
	Message string // why the last attempt was refused
}

// confirmRetry is the retry button's confirmation: a dry run of the retry
// and a form to go ahead. Reading it changes nothing.
func (a *API) confirmRetry(w http.ResponseWriter, r *http.Request) {
	pr, err := prOf(r)
	if err != nil {
		a.failPage(w, r, err)
		return
	}
	if !a.accessOf(r).act {
		a.failPage(w, r, errViewOnly)
		return
	}
	a.renderConfirm(w, r, pr, http.StatusOK, "")
}

func (a *API) renderConfirm(w http.ResponseWriter, r *http.Request, pr string, status int, msg string) {
	ans, err := a.Retrier.Retry(r.Context(), ledger.RetryRequest{PRID: pr, Actor: "dashboard", DryRun: true, Force: true})
	if err != nil {
		a.failPage(w, r, err)
		return
	}
	if probe, err := a.Retrier.Retry(r.Context(), ledger.RetryRequest{PRID: pr, Actor: "dashboard", DryRun: true}); err == nil {
		ans.NeedsForce = probe.NeedsForce
	}
	a.render(w, r, status, "confirm", confirmPage{frame: a.frame(r, "Retry "+pr, false), PR: pr, Answer: ans,
		CSRF: a.csrfToken(w, r), Key: "dash-" + randomHex(16), Message: msg})
}

// formRetry is the confirmation form's post: checked like every dashboard
// form (cookie, CSRF token, Origin/Host, session), then the same retry as
// POST /api/v1/sagas/{pr}/retry; it redirects to the timeline.
func (a *API) formRetry(w http.ResponseWriter, r *http.Request) {
	pr, err := prOf(r)
	if err != nil {
		a.failPage(w, r, err)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	actor, err := a.checkForm(r, true)
	if errors.Is(err, errNeedLogin) {
		http.Redirect(w, r, "/login?next="+url.QueryEscape("/sagas/"+url.PathEscape(pr)+"/retry"), http.StatusSeeOther)
		return
	}
	if err != nil {
		a.failPage(w, r, err)
		return
	}
	key := r.PostFormValue("key")
	if err := validKey(key); err != nil {
		a.failPage(w, r, err)
		return
	}
	ans, err := a.Retrier.Retry(r.Context(), ledger.RetryRequest{
		PRID: pr, Actor: actor, Force: r.PostFormValue("force") != "", IdempotencyKey: key,
	})
	if err != nil {
		a.failPage(w, r, err)
		return
	}
	if !ans.Accepted {
		a.renderConfirm(w, r, pr, http.StatusConflict, ans.Refused)
		return
	}
	http.Redirect(w, r, "/sagas/"+url.PathEscape(pr)+"?retried="+url.QueryEscape(ans.Replay.EventID), http.StatusSeeOther)
}

type loginPage struct {
	frame
	CSRF, Next, Message string
}

// loginPage asks for a token when tokens guard the dashboard.
func (a *API) loginPage(w http.ResponseWriter, r *http.Request) {
	next := safeNext(r.URL.Query().Get("next"))
	if !a.readGuarded() {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	a.render(w, r, http.StatusOK, "login", loginPage{frame: a.frame(r, "Log in", false), CSRF: a.csrfToken(w, r), Next: next})
}

// login opens a session for the holder of an operator token (view and
// retry) or of a read token (view only).
func (a *API) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	next := safeNext(r.PostFormValue("next"))
	if !a.readGuarded() {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	if _, err := a.checkForm(r, false); err != nil {
		a.failPage(w, r, err)
		return
	}
	tok := r.PostFormValue("token")
	s := sessionInfo{name: readerName}
	if name, ok := a.tokenName(tok); ok {
		s = sessionInfo{name: name, operator: true}
	} else if !a.isReadToken(tok) {
		a.render(w, r, http.StatusUnauthorized, "login", loginPage{frame: a.frame(r, "Log in", false),
			CSRF: a.csrfToken(w, r), Next: next, Message: "That is neither the API token (PRSAGA_API_TOKEN) nor the read token (PRSAGA_READ_TOKEN)."})
		return
	}
	a.setSession(w, r, s)
	http.Redirect(w, r, next, http.StatusSeeOther)
}
