package stack

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prsaga/prsaga/platform/httpx"
)

// TestHTTPLimits checks the limits where input enters over HTTP (design
// §11): the server's timeouts are set, headers are bounded, and every
// mutating route of every service refuses a body over httpx.MaxBody with
// 413 — before reading it all.
func TestHTTPLimits(t *testing.T) {
	s := startTestStack(t)

	h := s.http
	for name, d := range map[string]time.Duration{"ReadHeaderTimeout": h.ReadHeaderTimeout, "ReadTimeout": h.ReadTimeout,
		"WriteTimeout": h.WriteTimeout, "IdleTimeout": h.IdleTimeout} {
		if d <= 0 || d > 5*time.Minute {
			t.Errorf("%s = %s, want set and at most 5m", name, d)
		}
	}
	if h.MaxHeaderBytes <= 0 || h.MaxHeaderBytes > 1<<20 {
		t.Errorf("MaxHeaderBytes = %d, want set and at most 1 MiB", h.MaxHeaderBytes)
	}

	// Bodies that are valid as far as they go, so that a decoder reads
	// them up to the limit.
	bigJSON := append([]byte(`{"pad":"`), bytes.Repeat([]byte("x"), httpx.MaxBody)...)
	bigForm := append([]byte("pad="), bytes.Repeat([]byte("x"), httpx.MaxBody)...)
	for _, r := range []struct{ method, path string }{
		{http.MethodPost, "/api/v1/merge-requests"},
		{http.MethodPost, "/api/v1/repos/acme/widgets/statuses/" + strings.Repeat("a", 40)},
		{http.MethodPut, "/api/v1/repos/acme/widgets/protection/main"},
		{http.MethodPut, "/api/v1/repos/acme/widgets/watchers"},
		{http.MethodPost, "/api/v1/sagas/acme%2Fwidgets%2342/retry"},
		{http.MethodPost, "/sagas/acme%2Fwidgets%2342/retry"}, // the dashboard's forms read at most 16 KiB
	} {
		big, ct := bigJSON, "application/json"
		if !strings.HasPrefix(r.path, "/api/") {
			big, ct = bigForm, "application/x-www-form-urlencoded"
		}
		req, _ := http.NewRequest(r.method, s.URL+r.path, bytes.NewReader(big))
		req.Header.Set("Content-Type", ct)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Errorf("%s %s: %v", r.method, r.path, err)
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge && resp.StatusCode != http.StatusBadRequest &&
			resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s %s with a %d-byte body: %d, want it refused", r.method, r.path, len(big), resp.StatusCode)
		}
		if strings.HasPrefix(r.path, "/api/") && r.path != "/api/v1/sagas/acme%2Fwidgets%2342/retry" && resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("%s %s with a %d-byte body: %d, want 413", r.method, r.path, len(big), resp.StatusCode)
		}
	}

	req, _ := http.NewRequest(http.MethodGet, s.URL+"/api/v1/sagas", nil)
	req.Header.Set("X-Big", strings.Repeat("h", 2*h.MaxHeaderBytes))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("a %d-byte header: %d, want 431", 2*h.MaxHeaderBytes, resp.StatusCode)
	}
}
