package httpapi_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prsaga/prsaga/platform/httpx/httpxtest"
	"github.com/prsaga/prsaga/platform/sqlite/sqlitetest"
	"github.com/prsaga/prsaga/services/validator"
	"github.com/prsaga/prsaga/services/validator/httpapi"
	vsqlite "github.com/prsaga/prsaga/services/validator/sqlite"
)

// Fuzz targets for the validator's request decoding: the path values
// (repo, sha, branch), the content type and the body of every route, served
// by the real routes over a real SQLite store. Seed corpora are in
// testdata/fuzz/<target>.

func fuzzMux(f *testing.F) *http.ServeMux {
	f.Helper()
	db := sqlitetest.Open(f, vsqlite.Migrations)
	store := &validator.Validator{DB: db, Store: vsqlite.NewStore(db), Now: func() time.Time { return time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC) }}
	mux := http.NewServeMux()
	(&httpapi.API{Store: store, DefaultRequired: []string{"ci"}}).Routes(mux)
	return mux
}

// serve runs one request through mux and checks what every answer must
// be (httpxtest.Serve). ok is false when the request could not even be
// built.
func serve(t *testing.T, mux *http.ServeMux, method, target, contentType string, body []byte) (code int, out map[string]any, ok bool) {
	t.Helper()
	req, err := httpxtest.Request(method, "http://validator.test"+target, contentType, body)
	if err != nil {
		return 0, nil, false
	}
	rec, routed := httpxtest.Serve(t, mux, req)
	if routed {
		// Serve checked that a 4xx is a JSON object; a 2xx's shape is the
		// caller's to check.
		_ = json.Unmarshal(rec.Body.Bytes(), &out)
	}
	return rec.Code, out, true
}

// fuzzWrite fuzzes a write route: f is seeded with (repo, id, content
// type, body) cases, each input goes as method to the repo's route+id, and
// check runs on every write the route accepted (answered want).
func fuzzWrite(f *testing.F, method, route string, want int, seeds [][4]string, check func(t *testing.T, mux *http.ServeMux, target string, body []byte, out map[string]any)) {
	f.Helper()
	for _, s := range seeds {
		f.Add(s[0], s[1], s[2], []byte(s[3]))
	}
	mux := fuzzMux(f)
	f.Fuzz(func(t *testing.T, repo, id, contentType string, body []byte) {
		target := "/api/v1/repos/" + repo + route + id
		code, out, ok := serve(t, mux, method, target, contentType, body)
		if !ok || code != want {
			return
		}
		check(t, mux, target, body, out)
	})
}

// FuzzPostStatus posts a commit status: an accepted post names a valid
// repo and sha, stores exactly what Status.Validate allows, and is what a
// GET of the same commit then shows.
func FuzzPostStatus(f *testing.F) {
	fuzzWrite(f, http.MethodPost, "/statuses/", http.StatusCreated, [][4]string{
		{"acme/widgets", sha, "application/json", `{"context":"ci","state":"success","description":"ok"}`},
		{"acme/widgets", sha, "", `{"context":"ci/build: linux","state":"pending"}`},
		{"acme/widgets", sha, "text/plain", `{"context":"ci","state":"success"}`},
		{"acme/widgets", sha, "application/json", `{"context":"ci","state":"succeeded"}`},
		{"acme/widgets", sha, "application/json", `{"context":" ci","state":"success"}`},
		{"acme/widgets", sha, "application/json", `{"context":"ci\u0000","state":"success"}`},
		{"acme/widgets", sha, "application/json", `{"context":"ci","state":"success"} {"x":1}`},
		{"acme/widgets", sha, "application/json", `[1,2,3]`},
		{"acme/widgets", sha, "application/json", `{"context":"` + strings.Repeat("c", 256) + `","state":"error"}`},
		{"acme/..", sha, "application/json", `{"context":"ci","state":"success"}`},
		{"..%2F..", sha, "application/json", `{"context":"ci","state":"success"}`},
		{"acme/widgets", "ABCDEF0123456789ABCDEF0123456789ABCDEF01", "application/json", `{"context":"ci","state":"success"}`},
		{"acme/widgets", "HEAD", "application/json", `{"context":"ci","state":"success"}`},
		{"acme/widgets", sha, "application/json", "{\"context\":\"ci\",\"state\":\"success\",\"description\":\"\xff\"}"},
	}, func(t *testing.T, mux *http.ServeMux, target string, body []byte, out map[string]any) {
		var in struct{ Context, State, Description string }
		if err := json.Unmarshal(body, &in); err != nil {
			t.Fatalf("POST %q accepted a body that is not JSON: %q", target, body)
		}
		if err := (validator.Status{Context: in.Context, State: in.State, Description: in.Description}).Validate(); err != nil {
			t.Fatalf("POST %q accepted an invalid status %+v: %v", target, in, err)
		}
		if out["context"] != in.Context || out["state"] != in.State {
			t.Fatalf("POST %q answered %v for %+v", target, out, in)
		}
		gcode, got, _ := serve(t, mux, http.MethodGet, target, "", nil)
		if gcode != http.StatusOK {
			t.Fatalf("GET %q after an accepted post: %d", target, gcode)
		}
		found := false
		for _, s := range got["statuses"].([]any) {
			m := s.(map[string]any)
			found = found || m["context"] == in.Context && m["state"] == in.State
		}
		if !found {
			t.Fatalf("GET %q does not show the accepted status %+v: %v", target, in, got)
		}
	})
}

// FuzzPutProtection replaces a branch's required contexts: an accepted put
// names a valid repo and branch, and GET answers the same list.
func FuzzPutProtection(f *testing.F) {
	fuzzWrite(f, http.MethodPut, "/protection/", http.StatusOK, [][4]string{
		{"acme/widgets", "main", "application/json", `{"required_contexts":["ci","lint"]}`},
		{"acme/widgets", "release/1.x", "", `{"required_contexts":[]}`},
		{"acme/widgets", "main", "application/json", `{"required_contexts":null}`},
		{"acme/widgets", "main", "application/json", `{}`},
		{"acme/widgets", "main", "application/json", `{"required_contexts":["ci","ci"]}`},
		{"acme/widgets", "main", "application/json", `{"required_contexts":[` + strings.Repeat(`"x",`, 100) + `"y"]}`},
		{"acme/widgets", "a/../b", "application/json", `{"required_contexts":[]}`},
		{"acme/widgets", "a%00b", "application/json", `{"required_contexts":[]}`},
		{"acme/widgets", "-x", "application/json", `{"required_contexts":[]}`},
		{"acme/widgets", "main", "application/xml", `<x/>`},
	}, func(t *testing.T, mux *http.ServeMux, target string, body []byte, out map[string]any) {
		var in struct {
			Required []string `json:"required_contexts"`
		}
		if err := json.Unmarshal(body, &in); err != nil {
			t.Fatalf("PUT %q accepted a body that is not JSON: %q", target, body)
		}
		if err := validator.ValidateRequired(in.Required); err != nil {
			t.Fatalf("PUT %q accepted invalid contexts %q: %v", target, in.Required, err)
		}
		gcode, got, _ := serve(t, mux, http.MethodGet, target, "", nil)
		if gcode != http.StatusOK || got["branch"] != out["branch"] {
			t.Fatalf("GET %q after an accepted put: %d %v, put answered %v", target, gcode, got, out)
		}
		var stored []string
		for _, c := range got["required_contexts"].([]any) {
			stored = append(stored, c.(string))
		}
		if !slices.Equal(stored, in.Required) && !(len(stored) == 0 && len(in.Required) == 0) {
			t.Fatalf("GET %q answers %q, the put stored %q", target, stored, in.Required)
		}
	})
}
