package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/contracts/contractstest"
	"github.com/prsaga/prsaga/services/indexer"
	"github.com/prsaga/prsaga/services/indexer/bleveindex"
	"github.com/prsaga/prsaga/services/indexer/httpapi"
)

// FuzzSearch feeds GET /api/v1/search arbitrary query strings over an
// index holding a few PRs, one with a hostile title. No answer is a 5xx;
// a 4xx is {"error": "..."}; a 200 keeps to its limit and its repo filter,
// and its highlights are HTML-escaped (only <mark> tags are markup), so a
// title can never inject markup into a page that shows them. Seed corpus
// in testdata/fuzz/FuzzSearch.
func FuzzSearch(f *testing.F) {
	for _, q := range []string{
		"q=login", "q=title:login&limit=1", "repo=acme/widgets", "q=script", "q=%3Cscript%3E", "q=alert",
		"q=*", "q=/.*/", "q=title:/a.*/", "q=%22unterminated", "q=pr_number:%3E%3D1", "q=merged_at:%3E%222025-01-01T00:00:00Z%22",
		"q=x&limit=0", "q=x&limit=1001", "q=x&limit=-1", "q=x&repo=../etc", "q=a~9", "q=" + strings.Repeat("a+", 600),
		"q=%ff%fe", "q=x&q=y", "q=(a", "q=a^1000", "q=files:%2F%2F", "q=+-+-", "limit=5",
	} {
		f.Add(q)
	}
	idx, err := bleveindex.OpenWriter(filepath.Join(f.TempDir(), "index"), time.Second)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = idx.Close() })
	handle := (&indexer.Indexer{Index: idx}).OnNotifiedBatch
	var envs []contracts.Envelope
	var logs []*slog.Logger
	for i, title := range []string{"Add login", `<script>alert("x")</script> & <b>bold</b>`, "Fix token refresh"} {
		repo := []string{"acme/widgets", "acme/widgets", "other/repo"}[i]
		req := contracts.Request{PRID: contracts.PRID(repo, i+1), Repo: repo, PRNumber: i + 1, SourceBranch: "pr", TargetBranch: "main",
			HeadSHA: strings.Repeat("a", 40), Strategy: contracts.StrategyMerge, Title: title, RequestedBy: "<img src=x>"}
		env := contractstest.Envelope(f, "n-"+req.Repo[:4]+string(rune('0'+i)), contracts.TypeNotified, contracts.Source(contracts.ServiceNotifier), req.PRID, time.Now(),
			contracts.Notified{Request: req, MergeSHA: strings.Repeat("b", 40), ChangedPaths: []string{"src/<login>.go", "README.md"}},
			contracts.Meta{CorrelationID: "c-" + string(rune('0'+i)), Attempt: 1})
		envs, logs = append(envs, env), append(logs, slog.New(slog.DiscardHandler))
	}
	if _, errs := handle(context.Background(), envs, logs); errors.Join(errs...) != nil {
		f.Fatalf("index seed PRs: %v", errors.Join(errs...))
	}
	mux := http.NewServeMux()
	(&httpapi.API{Index: idx}).Routes(mux)
	// The hostile title is found and highlighted: the escaping property
	// below is checked on real markup.
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/search?q=script", nil))
	var seed struct {
		Hits []struct{ Highlights map[string][]string }
	}
	_ = json.Unmarshal(rec.Body.Bytes(), &seed)
	if len(seed.Hits) != 1 || len(seed.Hits[0].Highlights["title"]) == 0 || !strings.HasPrefix(seed.Hits[0].Highlights["title"][0], "&lt;<mark>script</mark>&gt;") {
		f.Fatalf("search for the hostile title: %d %s", rec.Code, rec.Body.Bytes())
	}
	f.Fuzz(func(t *testing.T, rawQuery string) {
		req, err := http.NewRequest(http.MethodGet, "http://indexer.test/api/v1/search", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.URL.RawQuery = rawQuery
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("search %q: answered %d: %s", rawQuery, rec.Code, rec.Body.Bytes())
		}
		var out struct {
			Error string `json:"error"`
			Total uint64 `json:"total"`
			Hits  []struct {
				Repo       string              `json:"repo"`
				Highlights map[string][]string `json:"highlights"`
			} `json:"hits"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
			t.Fatalf("search %q: answer %d is not JSON: %q", rawQuery, rec.Code, rec.Body.Bytes())
		}
		if rec.Code >= 400 {
			if out.Error == "" {
				t.Fatalf("search %q: answer %d without an error", rawQuery, rec.Code)
			}
			return
		}
		p := req.URL.Query()
		limit := 20
		if l := p.Get("limit"); l != "" {
			n, err := strconv.Atoi(l)
			if err != nil {
				t.Fatalf("search %q accepted limit %q", rawQuery, l)
			}
			limit = n
		}
		if len(out.Hits) > limit || uint64(len(out.Hits)) > out.Total {
			t.Fatalf("search %q: %d hits of %d, limit %d", rawQuery, len(out.Hits), out.Total, limit)
		}
		for _, h := range out.Hits {
			if repo := p.Get("repo"); repo != "" && h.Repo != repo {
				t.Fatalf("search %q: hit of repo %q", rawQuery, h.Repo)
			}
			for field, frags := range h.Highlights {
				for _, fr := range frags {
					bare := strings.NewReplacer("<mark>", "", "</mark>", "").Replace(fr)
					if strings.ContainsAny(bare, "<>\"") {
						t.Fatalf("search %q: highlight of %s is not HTML-escaped: %q", rawQuery, field, fr)
					}
				}
			}
		}
	})
}
