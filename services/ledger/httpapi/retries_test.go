package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prsaga/prsaga/services/ledger"
	"github.com/prsaga/prsaga/services/ledger/httpapi"
)

// gatedRetrier holds each retry until the test lets it go, so that a
// cancel can arrive while a saga is being retried.
type gatedRetrier struct {
	httpapi.Retrier
	entered chan struct{}
	release chan struct{}
}

func (g *gatedRetrier) Retry(ctx context.Context, req ledger.RetryRequest) (ledger.RetryAnswer, error) {
	if !req.DryRun {
		g.entered <- struct{}{}
		<-g.release
	}
	return g.Retrier.Retry(ctx, req)
}

// DELETE /api/v1/retries/{id} during a saga's retry lets that retry finish
// and answers the job's final report: a client counting failed sagas after
// it sees no replay land later (the CLI's interrupted `retry --all` did).
func TestCancelledBulkRetryAnswersTheFinalReport(t *testing.T) {
	gate := &gatedRetrier{entered: make(chan struct{}), release: make(chan struct{})}
	var api *httpapi.API
	f := newFixtureWith(t, func(a *httpapi.API) {
		gate.Retrier, a.Retrier, api = a.Retrier, gate, a
	})
	prs := []string{"acme/widgets#101", "acme/widgets#102", "acme/widgets#103"}
	f.failNotifying(now.Add(time.Minute), prs...)

	// A second server on the same API tells the test when the DELETE has
	// reached the ledger, so the retry is released only after it.
	deleting := make(chan struct{})
	mux := http.NewServeMux()
	api.Routes(mux)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			close(deleting)
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)

	resp, b := f.do("POST", "/api/v1/retries", strings.NewReader(`{"step":"NOTIFYING"}`))
	var started struct{ ID string }
	if err := json.Unmarshal(b, &started); err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST /api/v1/retries: %d %s", resp.StatusCode, b)
	}
	select {
	case <-gate.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the bulk retry never started a saga's retry")
	}

	type answer struct {
		rep  ledger.BulkReport
		code int
		err  error
	}
	answered := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodDelete, srv.URL+"/api/v1/retries/"+url.PathEscape(started.ID), nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		var a answer
		a.code, a.err = resp.StatusCode, json.NewDecoder(resp.Body).Decode(&a.rep)
		answered <- a
	}()
	select {
	case <-deleting:
	case <-time.After(10 * time.Second):
		t.Fatal("the DELETE never reached the ledger")
	}
	close(gate.release)

	var a answer
	select {
	case a = <-answered:
	case <-time.After(20 * time.Second):
		t.Fatal("DELETE did not answer")
	}
	if a.err != nil || a.code != http.StatusAccepted {
		t.Fatalf("DELETE: %d %v", a.code, a.err)
	}
	if !a.rep.Finished || !a.rep.Cancelled || a.rep.Done != 1 || a.rep.Replayed != 1 || a.rep.Errors != 0 {
		t.Fatalf("DELETE answered %+v, want the final report: finished, cancelled, the one saga in progress replayed", a.rep)
	}
	if n := len(f.notifyReplays()); n != 1 {
		t.Fatalf("%d replays in the outbox after the cancel, want the 1 the report names", n)
	}
	left := 0
	for _, pr := range prs {
		if f.saga(pr).State == "MERGE_FAILED" {
			left++
		}
	}
	if left != len(prs)-1 {
		t.Fatalf("%d sagas still failed after the cancel, want %d", left, len(prs)-1)
	}
}
