package httpxtest_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/prsaga/prsaga/platform/httpx/httpxtest"
)

// fatals records what Serve failed on instead of stopping the test.
type fatals struct {
	testing.TB
	msgs []string
}

func (f *fatals) Helper() {}

func (f *fatals) Fatalf(format string, args ...any) {
	f.msgs = append(f.msgs, fmt.Sprintf(format, args...))
}

func TestServeFailsOnAnswersNoAPIGives(t *testing.T) {
	answer := func(code int, ct, body string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", ct)
			w.WriteHeader(code)
			_, _ = w.Write([]byte(body))
		})
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /known", func(http.ResponseWriter, *http.Request) {})
	for _, c := range []struct {
		name   string
		h      http.Handler
		fail   string // what the failure says; "" when the answer is fine
		routed bool
	}{
		{"ok", answer(200, "text/html", "<p>not JSON, not checked</p>"), "", true},
		{"error object", answer(400, "application/json", `{"error":"bad repo"}`), "", true},
		{"5xx", answer(500, "application/json", `{"error":"internal error"}`), "answered 500", true},
		{"4xx not JSON", answer(400, "text/html", "<p>bad</p>"), "is not a JSON object", true},
		{"4xx without error", answer(422, "application/json", `{"message":"bad"}`), "without an error message", true},
		{"4xx empty error", answer(404, "application/json", `{"error":""}`), "without an error message", true},
		{"no route", mux, "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, err := httpxtest.Request(http.MethodGet, "http://api.test/unknown", "", nil)
			if err != nil {
				t.Fatal(err)
			}
			f := &fatals{TB: t}
			_, routed := httpxtest.Serve(f, c.h, req)
			if routed != c.routed {
				t.Errorf("routed %v, want %v", routed, c.routed)
			}
			switch {
			case c.fail == "" && len(f.msgs) != 0:
				t.Errorf("failed on a good answer: %q", f.msgs)
			case c.fail != "" && (len(f.msgs) != 1 || !strings.Contains(f.msgs[0], c.fail)):
				t.Errorf("failures %q, want one saying %q", f.msgs, c.fail)
			}
		})
	}
}

func TestRequestSetsTheContentTypeGiven(t *testing.T) {
	req, err := httpxtest.Request(http.MethodPut, "http://api.test/x", "application/json", []byte(`[]`))
	if err != nil || req.Header.Get("Content-Type") != "application/json" || req.Method != http.MethodPut {
		t.Fatalf("%v %v", req, err)
	}
	if req, err := httpxtest.Request(http.MethodPut, "http://api.test/x", "", nil); err != nil || req.Header.Get("Content-Type") != "" {
		t.Fatalf("no content type: %v %v", req, err)
	}
	if _, err := httpxtest.Request("BAD METHOD", "http://api.test/x", "", nil); err == nil {
		t.Fatal("a method with a space built a request")
	}
}
