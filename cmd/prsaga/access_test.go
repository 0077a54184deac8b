package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prsaga/prsaga/platform/config"
)

// Tokens of the guarded stack in these tests.
const (
	testAPIToken  = "api-s3cret"
	testReadToken = "read-s3cret"
)

// routeCase is one route of one service and what each caller gets.
type routeCase struct {
	pattern      string // as registered on the mux
	method, path string
	body         string
	// none, read, api: the status without a token, with the read token,
	// with the API token (as a bearer token).
	none, read, api int
}

const routePR = "acme%2Fwidgets%231"
const routeSHA = "0123456789abcdef0123456789abcdef01234567"

// routeCases lists every route of every service (TestEveryRouteIsInTheTable
// keeps it complete). The answers behind the guard are those of an empty
// stack: no saga, no watcher, no status.
var routeCases = []routeCase{
	// ledger API
	{"GET /api/v1/sagas", "GET", "/api/v1/sagas", "", 401, 200, 200},
	{"GET /api/v1/sagas/{pr}", "GET", "/api/v1/sagas/" + routePR, "", 401, 404, 404},
	{"GET /api/v1/sagas/{pr}/events", "GET", "/api/v1/sagas/" + routePR + "/events", "", 401, 404, 404},
	{"GET /api/v1/sagas/{rest...}", "GET", "/api/v1/sagas/acme/widgets/1", "", 401, 400, 400},
	{"POST /api/v1/sagas/{pr}/retry", "POST", "/api/v1/sagas/" + routePR + "/retry", "", 401, 401, 404},
	{"GET /api/v1/runs/{id}", "GET", "/api/v1/runs/no-such-run", "", 401, 404, 404},
	{"POST /api/v1/retries", "POST", "/api/v1/retries", `{"dry_run":true}`, 401, 401, 202},
	{"GET /api/v1/retries/{id}", "GET", "/api/v1/retries/no-such-job", "", 401, 404, 404},
	{"DELETE /api/v1/retries/{id}", "DELETE", "/api/v1/retries/no-such-job", "", 401, 401, 404},
	{"GET /api/v1/stats", "GET", "/api/v1/stats", "", 401, 200, 200},
	{"POST /api/v1/merge-requests", "POST", "/api/v1/merge-requests", "{}", 401, 401, 400},
	// ledger dashboard: a page without a token sends the browser to log in
	// (303); the retry confirmation needs the API token (403 for a reader).
	{"GET /{$}", "GET", "/", "", 303, 200, 200},
	{"GET /sagas/{pr}", "GET", "/sagas/" + routePR, "", 303, 404, 404},
	{"GET /sagas/{pr}/retry", "GET", "/sagas/" + routePR + "/retry", "", 303, 403, 404},
	// Form posts go by session cookie and CSRF token, never a bearer
	// token: without them every post is refused.
	{"POST /sagas/{pr}/retry", "POST", "/sagas/" + routePR + "/retry", "", 403, 403, 403},
	// The bulk retry: the failed list reads; its dry run needs the API
	// token; the confirmation and cancel are form posts.
	{"GET /failed", "GET", "/failed?step=NOTIFYING", "", 303, 200, 200},
	{"GET /failed/retry", "GET", "/failed/retry?step=NOTIFYING", "", 303, 403, 200},
	{"POST /failed/retry", "POST", "/failed/retry", "", 403, 403, 403},
	{"GET /retries/{id}", "GET", "/retries/no-such-job", "", 303, 404, 404},
	{"POST /retries/{id}/cancel", "POST", "/retries/no-such-job/cancel", "", 403, 403, 403},
	{"GET /login", "GET", "/login", "", 200, 200, 200},
	{"POST /login", "POST", "/login", "", 403, 403, 403},
	// validator
	{"POST /api/v1/repos/{owner}/{name}/statuses/{sha}", "POST", "/api/v1/repos/acme/widgets/statuses/" + routeSHA, `{"context":"ci","state":"success"}`, 401, 401, 201},
	{"GET /api/v1/repos/{owner}/{name}/statuses/{sha}", "GET", "/api/v1/repos/acme/widgets/statuses/" + routeSHA, "", 401, 200, 200},
	{"PUT /api/v1/repos/{owner}/{name}/protection/{branch...}", "PUT", "/api/v1/repos/acme/widgets/protection/main", `{"required_contexts":["ci"]}`, 401, 401, 200},
	{"GET /api/v1/repos/{owner}/{name}/protection/{branch...}", "GET", "/api/v1/repos/acme/widgets/protection/main", "", 401, 200, 200},
	// notifier
	{"PUT /api/v1/repos/{owner}/{name}/watchers", "PUT", "/api/v1/repos/acme/widgets/watchers", `[]`, 401, 401, 200},
	{"GET /api/v1/repos/{owner}/{name}/watchers", "GET", "/api/v1/repos/acme/widgets/watchers", "", 401, 200, 200},
	// indexer
	{"GET /api/v1/search", "GET", "/api/v1/search?q=hello", "", 401, 200, 200},
	{"GET /api/v1/index/snapshot", "GET", "/api/v1/index/snapshot", "", 401, 200, 200},
	// the stack's own
	{"GET /metrics", "GET", "/metrics", "", 401, 200, 200},
	{"GET /healthz", "GET", "/healthz", "", 200, 200, 200},
	{"GET /readyz", "GET", "/readyz", "", 200, 200, 200},
}

// call sends one request without following redirects.
func call(t *testing.T, base string, c routeCase, token string) (int, string) {
	t.Helper()
	var body io.Reader
	if c.body != "" {
		body = strings.NewReader(c.body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, c.method, base+c.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if c.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", c.method, c.path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusSeeOther {
		return resp.StatusCode, resp.Header.Get("Location")
	}
	return resp.StatusCode, string(b)
}

// TestEveryRouteNeedsTheRightToken runs a real stack (all five services,
// one HTTP listener) with PRSAGA_API_TOKEN and PRSAGA_READ_TOKEN set and
// calls every route without a token, with the read token and with the API
// token.
func TestEveryRouteNeedsTheRightToken(t *testing.T) {
	cfg := testConfig(t)
	cfg.APIToken, cfg.ReadToken = testAPIToken, testReadToken
	st := startStack(t, cfg)
	waitReady(t, st.URL)
	for _, c := range routeCases {
		t.Run(c.pattern, func(t *testing.T) {
			for _, who := range []struct {
				name, token string
				want        int
			}{{"no token", "", c.none}, {"read token", testReadToken, c.read}, {"API token", testAPIToken, c.api}} {
				got, body := call(t, st.URL, c, who.token)
				if got != who.want {
					t.Errorf("%s %s with %s: %d, want %d\n%s", c.method, c.path, who.name, got, who.want, clipBody(body))
					continue
				}
				switch {
				case got == http.StatusUnauthorized && c.method == "GET":
					// A refused read says what to send and which settings hold it.
					if !strings.Contains(body, "Authorization: Bearer") || !strings.Contains(body, "PRSAGA_READ_TOKEN") || !strings.Contains(body, "PRSAGA_API_TOKEN") {
						t.Errorf("%s %s with %s: 401 %q does not name the header and the settings", c.method, c.path, who.name, clipBody(body))
					}
				case got == http.StatusUnauthorized:
					// A refused write names the header and the API token.
					if !strings.Contains(body, "Authorization: Bearer") || !strings.Contains(body, "PRSAGA_API_TOKEN") {
						t.Errorf("%s %s with %s: 401 %q does not name the header and PRSAGA_API_TOKEN", c.method, c.path, who.name, clipBody(body))
					}
				case got == http.StatusSeeOther && !strings.HasPrefix(body, "/login?next="):
					t.Errorf("%s %s with %s: redirected to %q, want the login page", c.method, c.path, who.name, body)
				}
			}
		})
	}
}

// TestReadsOpenWithoutTokens: `prsaga dev` sets no token, and every read
// (dashboard included) answers on loopback without one.
func TestReadsOpenWithoutTokens(t *testing.T) {
	st := startStack(t, testConfig(t))
	waitReady(t, st.URL)
	for _, c := range routeCases {
		if c.method != "GET" {
			continue
		}
		// (GET /login sends the browser on to its next page: nothing to log in to.)
		if got, body := call(t, st.URL, c, ""); got == http.StatusUnauthorized || got == http.StatusForbidden || (got == http.StatusSeeOther && strings.HasPrefix(body, "/login")) {
			t.Errorf("%s %s without tokens configured: %d, want it open\n%s", c.method, c.path, got, clipBody(body))
		}
	}
}

// TestMetricsPublicSetting: PRSAGA_METRICS_PUBLIC=true opens /metrics (a
// scraper without a token) and nothing else.
func TestMetricsPublicSetting(t *testing.T) {
	cfg := testConfig(t)
	cfg.APIToken, cfg.ReadToken = testAPIToken, testReadToken
	getenv := func(k string) string {
		return map[string]string{"PRSAGA_METRICS_PUBLIC": "true", "PRSAGA_API_TOKEN": testAPIToken, "PRSAGA_DATA_DIR": cfg.DataDir}[k]
	}
	parsed, err := loadConfig(t, getenv)
	if err != nil {
		t.Fatal(err)
	}
	if !parsed.MetricsPublic {
		t.Fatal("PRSAGA_METRICS_PUBLIC=true did not set MetricsPublic")
	}
	cfg.MetricsPublic = true
	st := startStack(t, cfg)
	if got, body := call(t, st.URL, routeCase{method: "GET", path: "/metrics"}, ""); got != http.StatusOK || !strings.Contains(body, "# TYPE") {
		t.Errorf("GET /metrics without a token, PRSAGA_METRICS_PUBLIC=true: %d, want 200 with metrics", got)
	}
	if got, _ := call(t, st.URL, routeCase{method: "GET", path: "/api/v1/sagas"}, ""); got != http.StatusUnauthorized {
		t.Errorf("GET /api/v1/sagas without a token, PRSAGA_METRICS_PUBLIC=true: %d, want 401", got)
	}
}

// TestClientVerbsSendTheReadToken: with only PRSAGA_READ_TOKEN in its
// environment, `prsaga list` reads a guarded stack; without it, it is
// told why it was refused.
func TestClientVerbsSendTheReadToken(t *testing.T) {
	cfg := testConfig(t)
	cfg.APIToken, cfg.ReadToken = testAPIToken, testReadToken
	st := startStack(t, cfg)
	list := func(env map[string]string) (int, string) {
		var out, errb bytes.Buffer
		code := run(context.Background(), []string{"list", "--api", st.URL, "--json"}, func(k string) string { return env[k] }, &out, &errb)
		return code, out.String() + errb.String()
	}
	if code, out := list(map[string]string{"PRSAGA_READ_TOKEN": testReadToken}); code != 0 {
		t.Errorf("prsaga list with PRSAGA_READ_TOKEN: exit %d\n%s", code, out)
	}
	if code, out := list(nil); code == 0 || !strings.Contains(out, "PRSAGA_READ_TOKEN") {
		t.Errorf("prsaga list without a token: exit %d, want a failure naming PRSAGA_READ_TOKEN\n%s", code, out)
	}
}

// TestEveryRouteIsInTheTable reads the services' sources for the routes
// they register, so that a new route cannot miss its row above.
func TestEveryRouteIsInTheTable(t *testing.T) {
	known := map[string]bool{}
	for _, c := range routeCases {
		known[c.pattern] = true
	}
	re := regexp.MustCompile(`mux\.Handle(?:Func)?\("([^"]+)"`)
	found := 0
	for _, root := range []string{"../../services", "internal/stack"} {
		err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			src, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range re.FindAllStringSubmatch(string(src), -1) {
				found++
				if !known[m[1]] {
					t.Errorf("route %q (%s) has no row in routeCases", m[1], path)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if found < len(routeCases) {
		t.Errorf("found %d registered routes in the sources, the table has %d rows: a row names a route that is gone", found, len(routeCases))
	}
}

func waitReady(t *testing.T, base string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if got, _ := call(t, base, routeCase{method: "GET", path: "/readyz"}, ""); got == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the stack did not become ready within 20s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func clipBody(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

func loadConfig(t *testing.T, getenv config.Getenv) (config.Config, error) {
	t.Helper()
	fs, load := newFlags("test", getenv, io.Discard)
	if err := fs.Parse(nil); err != nil {
		return config.Config{}, err
	}
	return load()
}
