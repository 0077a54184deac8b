// Package httpxtest checks, in the services' API tests, what every answer
// of an API must be: never a 5xx, and a 4xx in the one error shape of
// package httpx, {"error": "..."}.
package httpxtest

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Request builds a request of method to target with body, and with
// contentType as its Content-Type unless it is empty. Fuzzed input may
// make a request that cannot be built: the error says so.
func Request(method, target, contentType string, body []byte) (*http.Request, error) {
	req, err := http.NewRequest(method, target, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	return req, nil
}

// Serve runs req through h and fails t on an answer no API gives: a 5xx,
// or a 4xx that is not a JSON object with a non-empty "error". The mux's
// own plain-text 404 or 405, for a path no route matches, is no API's
// answer: routed is false and its body is not checked.
func Serve(t testing.TB, h http.Handler, req *http.Request) (rec *httptest.ResponseRecorder, routed bool) {
	t.Helper()
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	code := rec.Code
	if code >= 500 {
		t.Fatalf("%s %q: answered %d: %s", req.Method, req.URL, code, rec.Body.Bytes())
		return rec, true
	}
	if (code == http.StatusNotFound || code == http.StatusMethodNotAllowed) && strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain") {
		return rec, false
	}
	if code >= 400 {
		var out map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
			t.Fatalf("%s %q: answer %d is not a JSON object: %q", req.Method, req.URL, code, rec.Body.Bytes())
			return rec, true
		}
		if msg, _ := out["error"].(string); msg == "" {
			t.Fatalf("%s %q: answer %d without an error message: %q", req.Method, req.URL, code, rec.Body.Bytes())
		}
	}
	return rec, true
}
