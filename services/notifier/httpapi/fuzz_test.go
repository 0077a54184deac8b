package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/prsaga/prsaga/platform/httpx/httpxtest"
	"github.com/prsaga/prsaga/platform/sqlite/sqlitetest"
	"github.com/prsaga/prsaga/services/notifier"
	"github.com/prsaga/prsaga/services/notifier/httpapi"
	nsqlite "github.com/prsaga/prsaga/services/notifier/sqlite"
)

// FuzzPutWatchers feeds the watchers API hostile repos, content types and
// bodies, served by the real routes over a real SQLite store. No answer is
// a 5xx; a 4xx is {"error": "..."}; an accepted list is answered — and
// then listed by GET — as ids and hosts only: no secret and no URL path,
// query or fragment of the request ever comes back (design §11). Seed
// corpus in testdata/fuzz/FuzzPutWatchers.
func FuzzPutWatchers(f *testing.F) {
	for _, s := range []struct{ repo, ct, body string }{
		{"acme/widgets", "application/json", `[{"url":"https://hooks.example/p/secret-path?token=q","secret":"s3cret-value"}]`},
		{"acme/widgets", "", `[]`},
		{"acme/widgets", "application/json", `null`},
		{"acme/widgets", "application/json", `{"url":"https://a.example","secret":"12345678"}`},
		{"acme/widgets", "application/json", `[{"url":"ftp://a.example/x","secret":"12345678"}]`},
		{"acme/widgets", "application/json", `[{"url":"https://user:pw@a.example/x","secret":"12345678"}]`},
		{"acme/widgets", "application/json", `[{"url":"https://a.example/x","secret":"short"}]`},
		{"acme/widgets", "application/json", `[{"url":"https://a.example/x","secret":"12345678"},{"url":"https://a.example/x","secret":"87654321"}]`},
		{"acme/widgets", "application/json", `[{"url":"https://a.example:99999/x","secret":"12345678"}]`},
		{"acme/widgets", "application/json", `[{"url":"https://a.example/#frag-secret","secret":"12345678"}]`},
		{"acme/widgets", "application/json", `[{"url":"http://[::1]:8080/hook","secret":"12345678"}]`},
		{"acme/widgets", "text/plain", `[]`},
		{"acme/..", "application/json", `[]`},
		{"acme/widgets", "application/json", `[` + strings.Repeat(`{"url":"https://a.example/x","secret":"12345678"},`, 101) + `{}]`},
		{"acme/widgets", "application/json", "[{\"url\":\"https://a.example/\xff\",\"secret\":\"12345678\"}]"},
	} {
		f.Add(s.repo, s.ct, []byte(s.body))
	}
	db := sqlitetest.Open(f, nsqlite.Migrations)
	api := &httpapi.API{Store: notifier.Tables{Store: &nsqlite.Store{DB: db}, DB: db}, LookupIP: noDNS}
	mux := http.NewServeMux()
	api.Routes(mux)
	// ok is false when the request cannot be built or no route matched.
	do := func(t *testing.T, method, target, ct string, body []byte) (int, []byte, bool) {
		req, err := httpxtest.Request(method, "http://notifier.test"+target, ct, body)
		if err != nil {
			return 0, nil, false
		}
		rec, routed := httpxtest.Serve(t, mux, req)
		if !routed {
			return rec.Code, nil, false
		}
		return rec.Code, rec.Body.Bytes(), true
	}
	f.Fuzz(func(t *testing.T, repo, contentType string, body []byte) {
		target := "/api/v1/repos/" + repo + "/watchers"
		code, answer, ok := do(t, http.MethodPut, target, contentType, body)
		if !ok || code != http.StatusOK {
			return
		}
		var in []struct{ URL, Secret string }
		if err := json.Unmarshal(body, &in); err != nil {
			t.Fatalf("PUT %q accepted a body that is not a JSON list: %q", target, body)
		}
		_, listed, _ := do(t, http.MethodGet, target, "", nil)
		for _, ans := range [][]byte{answer, listed} {
			var out []watcherView
			if err := json.Unmarshal(ans, &out); err != nil || len(out) != len(in) {
				t.Fatalf("PUT %q of %d watchers answered %q", target, len(in), ans)
			}
			// Watchers are listed by id, not in the order they were put:
			// compare the hosts shown with the hosts put, as sets.
			var shown strings.Builder
			var want, got []string
			for i, w := range out {
				u, err := url.Parse(in[i].URL)
				if err != nil {
					t.Fatalf("accepted watcher URL %q does not parse: %v", in[i].URL, err)
				}
				want, got = append(want, u.Host), append(got, w.Host)
				shown.WriteString(w.ID + " " + w.Host + "\n")
			}
			slices.Sort(want)
			slices.Sort(got)
			if !slices.Equal(want, got) {
				t.Fatalf("watchers shown with hosts %q, want %q", got, want)
			}
			for _, w := range in {
				u, _ := url.Parse(w.URL)
				for what, secret := range map[string]string{"secret": w.Secret, "path": u.EscapedPath(), "query": u.RawQuery, "fragment": u.Fragment} {
					if len(secret) < 2 || strings.Contains(u.Host, secret) || strings.Contains(strings.ToLower(u.Host), strings.ToLower(secret)) {
						continue // too short to tell, or part of the host, which may be shown
					}
					if strings.Contains(shown.String(), secret) && !idsContain(out, secret) {
						t.Fatalf("the answer %q shows a watcher's %s %q", ans, what, secret)
					}
				}
			}
		}
	})
}

// noDNS asks no DNS server: every name is unknown, so a watcher's host is
// accepted unless it is private by itself (an IP literal, localhost).
func noDNS(context.Context, string) ([]netip.Addr, error) { return nil, errors.New("no such host") }

type watcherView struct {
	ID   string `json:"id"`
	Host string `json:"host"`
}

// idsContain reports whether s occurs in a watcher id (hex: a short
// secret may match one by chance).
func idsContain(ws []watcherView, s string) bool {
	for _, w := range ws {
		if strings.Contains(w.ID, s) {
			return true
		}
	}
	return false
}
