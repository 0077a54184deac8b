package httpapi

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/prsaga/prsaga/platform/httpx"
)

// The dashboard's forms (design §11): a same-site cookie + CSRF token, the
// Origin checked against Host, and — without a token — a loopback Host only,
// so that a page on another site cannot post to a local dashboard, not even
// through DNS rebinding. With operator tokens configured, a form also needs
// a session, opened on /login with one of the tokens.
const (
	csrfCookie    = "prsaga_csrf"
	sessionCookie = "prsaga_session"
	sessionTTL    = 12 * time.Hour
)

// errNeedLogin: a form post without a valid session while tokens guard
// the dashboard.
var errNeedLogin = errors.New("log in with an operator token first")

func (a *API) secret() []byte {
	a.keyOnce.Do(func() {
		if len(a.SessionKey) > 0 {
			a.key = a.SessionKey
			return
		}
		a.key = make([]byte, 32)
		_, _ = rand.Read(a.key) // never fails (crypto/rand)
	})
	return a.key
}

func (a *API) mac(parts ...string) string {
	m := hmac.New(sha256.New, a.secret())
	for _, p := range parts {
		m.Write([]byte(p))
		m.Write([]byte{0})
	}
	return hex.EncodeToString(m.Sum(nil))
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func setCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: "/", MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
}

// csrfToken returns the form token of this browser, giving it its CSRF
// cookie first when it has none.
func (a *API) csrfToken(w http.ResponseWriter, r *http.Request) string {
	id := ""
	if c, err := r.Cookie(csrfCookie); err == nil && len(c.Value) == 32 {
		if _, err := hex.DecodeString(c.Value); err == nil {
			id = c.Value
		}
	}
	if id == "" {
		id = randomHex(16)
		setCookie(w, r, csrfCookie, id, 0)
	}
	return a.mac("csrf", id)
}

// checkForm checks a dashboard form post and returns who posts it: the
// session's token name, or "local" on an unguarded loopback dashboard.
// needSession is false for the login form itself.
func (a *API) checkForm(r *http.Request, needSession bool) (string, error) {
	if !a.guarded() && !loopbackHost(r.Host) {
		return "", httpx.Errorf(http.StatusForbidden, "without an operator token the dashboard accepts forms only on a loopback address, not %q", truncate(r.Host))
	}
	if err := sameOrigin(r); err != nil {
		return "", err
	}
	c, err := r.Cookie(csrfCookie)
	if err != nil {
		return "", httpx.Errorf(http.StatusForbidden, "no CSRF cookie: reload the page and try again")
	}
	if !hmac.Equal([]byte(r.PostFormValue("csrf")), []byte(a.mac("csrf", c.Value))) {
		return "", httpx.Errorf(http.StatusForbidden, "the form's CSRF token does not match: reload the page and try again")
	}
	if !a.guarded() {
		return "local", nil
	}
	if s, ok := a.session(r); ok && (s.operator || !needSession) {
		return s.name, nil
	} else if ok {
		return "", errViewOnly
	}
	if needSession {
		return "", errNeedLogin
	}
	return "", nil
}

// errViewOnly: a form post from a session opened with the read token.
var errViewOnly = httpx.Errorf(http.StatusForbidden, "this session was opened with the read token (PRSAGA_READ_TOKEN) and may only view: log in with the API token (PRSAGA_API_TOKEN) to retry")

// sameOrigin refuses a post whose Origin (or, without one, Referer) is
// not this host, and any that the browser marks as cross-site.
func sameOrigin(r *http.Request) error {
	if s := r.Header.Get("Sec-Fetch-Site"); s != "" && s != "same-origin" {
		return httpx.Errorf(http.StatusForbidden, "cross-site form post refused (Sec-Fetch-Site: %s)", truncate(s))
	}
	src := r.Header.Get("Origin")
	if src == "" {
		src = r.Referer()
	}
	if src == "" {
		return httpx.Errorf(http.StatusForbidden, "form post without Origin or Referer refused")
	}
	u, err := url.Parse(src)
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if err != nil || u.Scheme != scheme || u.Host != r.Host {
		return httpx.Errorf(http.StatusForbidden, "form post from %s refused: not this dashboard's origin", truncate(src))
	}
	return nil
}

// loopbackHost reports whether a Host header names a loopback address:
// "localhost" or a loopback IP literal. A DNS name that merely resolves to
// 127.0.0.1 (DNS rebinding) is refused.
func loopbackHost(host string) bool {
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// sessionInfo is what a session cookie says: who, and whether it was
// opened with an operator token (else with a read token: view only).
type sessionInfo struct {
	name     string
	operator bool
}

// Session roles as the cookie writes them.
const (
	roleOperator = "op"
	roleViewer   = "view"
)

// session reads a valid session cookie.
func (a *API) session(r *http.Request) (sessionInfo, bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return sessionInfo{}, false
	}
	parts := strings.Split(c.Value, ".")
	if len(parts) != 4 {
		return sessionInfo{}, false
	}
	hexName, exp, role, sig := parts[0], parts[1], parts[2], parts[3]
	if !hmac.Equal([]byte(sig), []byte(a.mac("session", hexName, exp, role))) {
		return sessionInfo{}, false
	}
	n, err := strconv.ParseInt(exp, 10, 64)
	name, herr := hex.DecodeString(hexName)
	if err != nil || herr != nil || a.now().Unix() > n || (role != roleOperator && role != roleViewer) {
		return sessionInfo{}, false
	}
	return sessionInfo{name: string(name), operator: role == roleOperator}, true
}

// setSession gives the browser a session cookie: the token's name (hex, so
// any name fits the cookie), an expiry, the role and their HMAC.
func (a *API) setSession(w http.ResponseWriter, r *http.Request, s sessionInfo) {
	exp := strconv.FormatInt(a.now().Add(sessionTTL).Unix(), 10)
	hexName := hex.EncodeToString([]byte(s.name))
	role := roleViewer
	if s.operator {
		role = roleOperator
	}
	setCookie(w, r, sessionCookie, hexName+"."+exp+"."+role+"."+a.mac("session", hexName, exp, role), int(sessionTTL.Seconds()))
}

// safeNext keeps a post-login redirect on this site.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") {
		return "/"
	}
	return next
}
