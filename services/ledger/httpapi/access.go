package httpapi

import (
	"crypto/subtle"
	"net/http"
	"net/url"
	"strings"

	"github.com/prsaga/prsaga/platform/httpx"
)

// Who may do what (design §11): with no token configured everything is
// open (loopback listeners only, checked at start). With tokens, a read
// needs a read token or an operator token; acting (retry, merge request)
// needs an operator token. The dashboard's pages take a bearer token or
// a session opened on /login with either kind; the session remembers
// which, so a dashboard holding the read token views but cannot retry.

// readerName names holders of a read token in the "signed in as" line.
const readerName = "reader"

// readers are the tokens that may read: the read tokens and the operator
// tokens.
func (a *API) readers() httpx.Tokens {
	return append(append(httpx.Tokens{}, a.ReadTokens...), a.Tokens...)
}

// readGuarded reports whether reads need a token.
func (a *API) readGuarded() bool { return a.readers().Set() }

// isReadToken reports whether tok is one of the read tokens (compared in
// constant time).
func (a *API) isReadToken(tok string) bool {
	match := 0
	for _, want := range a.ReadTokens {
		if want != "" {
			match |= subtle.ConstantTimeCompare([]byte(tok), []byte(want))
		}
	}
	return match == 1
}

// access is what a page request may do.
type access struct {
	view, act bool
	name      string // who, for "signed in as" and the history; "" when unknown
}

// accessOf reads a request's bearer token or session cookie.
func (a *API) accessOf(r *http.Request) access {
	if !a.readGuarded() {
		return access{view: true, act: !a.guarded(), name: ""}
	}
	if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		if name, ok := a.tokenName(tok); ok {
			return access{view: true, act: true, name: name}
		}
		if a.isReadToken(tok) {
			return access{view: true, act: !a.guarded(), name: readerName}
		}
	}
	if s, ok := a.session(r); ok {
		return access{view: true, act: s.operator || !a.guarded(), name: s.name}
	}
	return access{}
}

// viewer wraps a page that reads: without a token or session while tokens
// guard reads, the browser is sent to log in and come back.
func (a *API) viewer(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !a.accessOf(r).view {
			http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		h(w, r)
	}
}
