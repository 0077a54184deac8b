package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
)

// FuzzBulkRetryPages sends any query to the failed list and to the bulk
// retry's dry run: never a 5xx, and the dry run never replays anything
// (the outbox stays empty).
func FuzzBulkRetryPages(f *testing.F) {
	for _, q := range []string{"", "step=VALIDATING", "step=NOTIFYING&repo=acme/widgets", "since=2h&force=true", "since=2026-03-01T11:00:00Z",
		"reason=ci.*red&limit=5", "reason=(", "limit=99999999999999999999", "since=-5h", "step=MERGED", "repo=../etc", "force=&limit=0x10",
		"since=9999999999h", "reason=" + strings.Repeat("a*", 300)} {
		f.Add(q)
	}
	l := newFuzzLedger(f)
	f.Fuzz(func(t *testing.T, q string) {
		for _, path := range []string{"/failed", "/failed/retry"} {
			req, err := http.NewRequest(http.MethodGet, "http://localhost"+path, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.URL.RawQuery = q
			rec, _ := l.serve(t, req)
			if rec.Code != http.StatusOK && rec.Code != http.StatusBadRequest {
				t.Fatalf("GET %s?%s: %d, want 200 or 400", path, q, rec.Code)
			}
			if rows := l.drainOutbox(t); len(rows) != 0 {
				t.Fatalf("GET %s?%s put %d rows into the outbox", path, q, len(rows))
			}
		}
	})
}
