package httpapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prsaga/prsaga/platform/httpx"
	"github.com/prsaga/prsaga/platform/sqlite/sqlitetest"
	"github.com/prsaga/prsaga/services/validator"
	"github.com/prsaga/prsaga/services/validator/httpapi"
	vsqlite "github.com/prsaga/prsaga/services/validator/sqlite"
)

const sha = "1111111111111111111111111111111111111111"

func start(t *testing.T, operator, status httpx.Tokens) *httptest.Server {
	t.Helper()
	db := sqlitetest.Open(t, vsqlite.Migrations)
	clock := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	store := &validator.Validator{DB: db, Store: vsqlite.NewStore(db), Now: func() time.Time { clock = clock.Add(time.Second); return clock }}
	mux := http.NewServeMux()
	(&httpapi.API{Store: store, DefaultRequired: []string{"ci"}, OperatorTokens: operator, StatusTokens: status}).Routes(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// call does one request and returns the status and the decoded JSON body.
func call(t *testing.T, srv *httptest.Server, method, path, token, body string) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s %s: answer %d is not a JSON object: %q", method, path, resp.StatusCode, raw)
	}
	return resp.StatusCode, out
}

func compact(v any) string {
	var b bytes.Buffer
	_ = json.NewEncoder(&b).Encode(v)
	return strings.TrimSpace(b.String())
}

const statuses = "/api/v1/repos/acme/widgets/statuses/" + sha

func TestStatusesPostAndGet(t *testing.T) {
	srv := start(t, nil, nil)

	code, body := call(t, srv, "GET", statuses, "", "")
	if code != 200 || compact(body) != `{"sha":"`+sha+`","state":"pending","statuses":[]}` {
		t.Errorf("GET with no statuses = %d %s; want 200, pending, []", code, compact(body))
	}

	code, body = call(t, srv, "POST", statuses, "", `{"context":"ci","state":"pending","description":"queued"}`)
	want := `{"context":"ci","description":"queued","repo":"acme/widgets","sha":"` + sha + `","state":"pending","updated_at":"2030-01-02T03:04:06Z"}`
	if code != 201 || compact(body) != want {
		t.Errorf("POST = %d %s\nwant 201 %s", code, compact(body), want)
	}
	call(t, srv, "POST", statuses, "", `{"context":"lint","state":"success"}`)
	code, body = call(t, srv, "GET", statuses, "", "")
	if code != 200 || body["state"] != "pending" {
		t.Errorf("GET with ci pending, lint success = %d %s; want state pending", code, compact(body))
	}

	// The latest status of a context wins.
	call(t, srv, "POST", statuses, "", `{"context":"ci","state":"success","description":"green"}`)
	code, body = call(t, srv, "GET", statuses, "", "")
	want = `{"sha":"` + sha + `","state":"success","statuses":[` +
		`{"context":"ci","description":"green","state":"success","updated_at":"2030-01-02T03:04:08Z"},` +
		`{"context":"lint","description":"","state":"success","updated_at":"2030-01-02T03:04:07Z"}]}`
	if code != 200 || compact(body) != want {
		t.Errorf("GET after ci success = %d %s\nwant 200 %s", code, compact(body), want)
	}
	call(t, srv, "POST", statuses, "", `{"context":"lint","state":"error"}`)
	if _, body = call(t, srv, "GET", statuses, "", ""); body["state"] != "failure" {
		t.Errorf("combined state with lint error = %v, want failure", body["state"])
	}
}

func TestStatusesRefuseBadInput(t *testing.T) {
	srv := start(t, nil, nil)
	for _, tc := range []struct {
		name, method, path, body, problem string
	}{
		{"short sha", "POST", "/api/v1/repos/acme/widgets/statuses/abc123", `{"context":"ci","state":"success"}`, "sha"},
		{"upper-case sha", "GET", "/api/v1/repos/acme/widgets/statuses/" + strings.Repeat("AB", 20), "", "sha"},
		{"bad owner", "GET", "/api/v1/repos/ac%20me/widgets/statuses/" + sha, "", "repo"},
		{"dot-dot name", "POST", "/api/v1/repos/acme/a..b/statuses/" + sha, `{"context":"ci","state":"success"}`, "repo"},
		{"escaped slash in name", "GET", "/api/v1/repos/acme/a%2Fb/statuses/" + sha, "", "repo"},
		{"bad state", "POST", statuses, `{"context":"ci","state":"green"}`, `state "green"`},
		{"missing state", "POST", statuses, `{"context":"ci"}`, "state is missing"},
		{"missing context", "POST", statuses, `{"state":"success"}`, "context is empty"},
		{"not JSON", "POST", statuses, `{"context":`, "not valid JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := call(t, srv, tc.method, tc.path, "", tc.body)
			msg, _ := body["error"].(string)
			if code != 400 || !strings.Contains(msg, tc.problem) {
				t.Errorf("%s %s = %d %s; want 400 naming %q", tc.method, tc.path, code, compact(body), tc.problem)
			}
		})
	}
}

func TestTokens(t *testing.T) {
	srv := start(t, httpx.Tokens{"op-secret"}, httpx.Tokens{"ci-secret"})
	post := `{"context":"ci","state":"success"}`
	for _, tc := range []struct {
		name, method, path, token, body string
		want                            int
	}{
		{"status without token", "POST", statuses, "", post, 401},
		{"status with wrong token", "POST", statuses, "nope", post, 401},
		{"status with status token", "POST", statuses, "ci-secret", post, 201},
		{"status with operator token", "POST", statuses, "op-secret", post, 201},
		{"reading statuses without token", "GET", statuses, "", "", 401},
		{"reading statuses with status token", "GET", statuses, "ci-secret", "", 401},
		{"reading statuses with operator token", "GET", statuses, "op-secret", "", 200},
		{"protection without token", "PUT", "/api/v1/repos/acme/widgets/protection/main", "", `{"required_contexts":["ci"]}`, 401},
		{"protection with status token", "PUT", "/api/v1/repos/acme/widgets/protection/main", "ci-secret", `{"required_contexts":["ci"]}`, 401},
		{"protection with operator token", "PUT", "/api/v1/repos/acme/widgets/protection/main", "op-secret", `{"required_contexts":["ci"]}`, 200},
		{"reading protection without token", "GET", "/api/v1/repos/acme/widgets/protection/main", "", "", 401},
		{"reading protection with operator token", "GET", "/api/v1/repos/acme/widgets/protection/main", "op-secret", "", 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := call(t, srv, tc.method, tc.path, tc.token, tc.body)
			if code != tc.want {
				t.Errorf("%s %s (token %q) = %d %s; want %d", tc.method, tc.path, tc.token, code, compact(body), tc.want)
			}
			if code == 401 && body["error"] == nil {
				t.Errorf("401 without an error message: %s", compact(body))
			}
		})
	}
}

func TestProtection(t *testing.T) {
	srv := start(t, nil, nil)
	const path = "/api/v1/repos/acme/widgets/protection/release/1.x"

	code, body := call(t, srv, "GET", path, "", "")
	if want := `{"branch":"release/1.x","configured":false,"repo":"acme/widgets","required_contexts":["ci"]}`; code != 200 || compact(body) != want {
		t.Errorf("GET unconfigured = %d %s; want 200 %s (the default)", code, compact(body), want)
	}
	code, body = call(t, srv, "PUT", path, "", `{"required_contexts":["ci","lint"]}`)
	want := `{"branch":"release/1.x","configured":true,"repo":"acme/widgets","required_contexts":["ci","lint"]}`
	if code != 200 || compact(body) != want {
		t.Errorf("PUT = %d %s; want 200 %s", code, compact(body), want)
	}
	if code, body = call(t, srv, "GET", path, "", ""); code != 200 || compact(body) != want {
		t.Errorf("GET after PUT = %d %s; want 200 %s", code, compact(body), want)
	}
	// An empty list is a configuration too: nothing required.
	call(t, srv, "PUT", path, "", `{"required_contexts":[]}`)
	if _, body = call(t, srv, "GET", path, "", ""); compact(body) != `{"branch":"release/1.x","configured":true,"repo":"acme/widgets","required_contexts":[]}` {
		t.Errorf("GET after PUT [] = %s", compact(body))
	}
	// Another branch is unaffected.
	if _, body = call(t, srv, "GET", "/api/v1/repos/acme/widgets/protection/main", "", ""); body["configured"] != false {
		t.Errorf("GET main = %s; want unconfigured", compact(body))
	}

	for _, tc := range []struct{ name, path, body, problem string }{
		{"missing list", path, `{}`, "required_contexts is missing"},
		{"duplicate", path, `{"required_contexts":["ci","ci"]}`, "twice"},
		{"empty context", path, `{"required_contexts":[""]}`, "required_contexts[0] is empty"},
		{"bad branch", "/api/v1/repos/acme/widgets/protection/a..b", `{"required_contexts":[]}`, "branch"},
		{"branch ending in .lock", "/api/v1/repos/acme/widgets/protection/x.lock", `{"required_contexts":[]}`, "branch"},
		{"bad repo", "/api/v1/repos/acme/.git/protection/main", `{"required_contexts":[]}`, "repo"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := call(t, srv, "PUT", tc.path, "", tc.body)
			msg, _ := body["error"].(string)
			if code != 400 || !strings.Contains(msg, tc.problem) {
				t.Errorf("PUT %s %s = %d %s; want 400 naming %q", tc.path, tc.body, code, compact(body), tc.problem)
			}
		})
	}
}
