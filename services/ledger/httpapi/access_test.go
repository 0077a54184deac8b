package httpapi_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/prsaga/prsaga/platform/httpx"
	"github.com/prsaga/prsaga/services/ledger/httpapi"
)

// readFixture guards the API with an operator token and a read token.
func readFixture(t *testing.T) *fixture {
	return newFixtureWith(t, func(a *httpapi.API) {
		a.Tokens, a.TokenNames, a.ReadTokens = httpx.Tokens{"op-s3cret"}, []string{"alice"}, httpx.Tokens{"ro-s3cret"}
	})
}

func TestReadsNeedATokenWhenOneIsSet(t *testing.T) {
	f := readFixture(t)
	for _, path := range []string{"/api/v1/sagas", sagaPath(merged), sagaPath(merged) + "/events", "/api/v1/stats", "/api/v1/runs/no-such-run"} {
		resp, b := f.do("GET", path, nil)
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(b), "PRSAGA_READ_TOKEN") || !strings.Contains(string(b), "Authorization: Bearer") {
			t.Errorf("GET %s without a token: %d %s, want 401 naming the header and PRSAGA_READ_TOKEN", path, resp.StatusCode, b)
		}
		if resp, b := f.do("GET", path, nil, "Authorization", "Bearer wrong"); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s with a wrong token: %d %s, want 401", path, resp.StatusCode, b)
		}
		for _, tok := range []string{"ro-s3cret", "op-s3cret"} {
			if resp, b := f.do("GET", path, nil, "Authorization", "Bearer "+tok); resp.StatusCode == http.StatusUnauthorized {
				t.Errorf("GET %s with %s: %d %s, want it read", path, tok, resp.StatusCode, b)
			}
		}
	}
	// The read token does not act.
	if resp, b := f.do("POST", sagaPath(failed)+"/retry?force=true", nil, "Authorization", "Bearer ro-s3cret"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("retry with the read token: %d %s, want 401", resp.StatusCode, b)
	}
}

func TestDashboardWithTheReadToken(t *testing.T) {
	f := readFixture(t)
	timeline := "/sagas/" + url.PathEscape(failed)
	noFollow := *f.srv.Client()
	noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	get := func(path string, cookies []*http.Cookie, header ...string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", f.srv.URL+path, nil)
		for _, c := range cookies {
			req.AddCookie(c)
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, string(b)
	}
	for _, path := range []string{"/", timeline, timeline + "/retry"} {
		resp, _ := get(path, nil)
		if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || loc != "/login?next="+url.QueryEscape(path) {
			t.Errorf("GET %s without a session: %d to %q, want 303 to the login page", path, resp.StatusCode, loc)
		}
	}
	if resp, page := get("/", nil, "Authorization", "Bearer ro-s3cret"); resp.StatusCode != http.StatusOK || !strings.Contains(page, "signed in as reader") {
		t.Errorf("GET / with the read token as bearer: %d", resp.StatusCode)
	}

	login := func(tok string) []*http.Cookie {
		t.Helper()
		_, _, lf := f.load("/login?next=" + url.QueryEscape(timeline))
		resp := f.post("/login", lf, url.Values{"token": {tok}, "next": {timeline}})
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != timeline {
			t.Fatalf("login with %s: %d to %q", tok, resp.StatusCode, resp.Header.Get("Location"))
		}
		return append(lf.cookies, resp.Cookies()...)
	}
	viewer := login("ro-s3cret")
	resp, page := get(timeline, viewer)
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, "signed in as reader") {
		t.Fatalf("timeline with a read session: %d\n%s", resp.StatusCode, page)
	}
	if strings.Contains(page, `id="retry"`) {
		t.Error("a read session is offered the retry button")
	}
	if resp, page := get(timeline+"/retry", viewer); resp.StatusCode != http.StatusForbidden || !strings.Contains(page, "PRSAGA_API_TOKEN") {
		t.Errorf("retry confirmation with a read session: %d, want 403 naming PRSAGA_API_TOKEN\n%s", resp.StatusCode, page)
	}
	_, _, fm := f.load(timeline, viewer...)
	if resp := f.post(timeline+"/retry", fm, url.Values{"force": {"true"}, "key": {"k-view"}}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("retry form posted with a read session: %d, want 403", resp.StatusCode)
	}
	// The role is signed with the rest of the cookie: a viewer cannot
	// promote itself.
	var forged []*http.Cookie
	for _, c := range viewer {
		c := *c
		if c.Name == "prsaga_session" {
			c.Value = strings.Replace(c.Value, ".view.", ".op.", 1)
		}
		forged = append(forged, &c)
	}
	if resp, _ := get(timeline, forged); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("timeline with a forged role: %d, want 303 to log in", resp.StatusCode)
	}

	operator := login("op-s3cret")
	if resp, page := get(timeline, operator); resp.StatusCode != http.StatusOK || !strings.Contains(page, `id="retry"`) || !strings.Contains(page, "signed in as alice") {
		t.Errorf("timeline with an operator session: %d, want the retry button\n%s", resp.StatusCode, page)
	}
	if resp, _ := get(timeline+"/retry", operator); resp.StatusCode != http.StatusOK {
		t.Errorf("retry confirmation with an operator session: %d", resp.StatusCode)
	}
}
