package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/natsembed/natstest"
	"github.com/prsaga/prsaga/platform/service"
	"github.com/prsaga/prsaga/platform/sqlite/sqlitetest"
	"github.com/prsaga/prsaga/services/notifier/server"
	"github.com/prsaga/prsaga/services/notifier/webhook"
)

// receiver is a webhook endpoint that records what it got; fail makes it
// answer 500 until cleared.
type receiver struct {
	mu     sync.Mutex
	fail   bool
	got    []http.Header
	bodies [][]byte
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	r.got = append(r.got, req.Header.Clone())
	r.bodies = append(r.bodies, body)
	w.WriteHeader(http.StatusNoContent)
}

func mergedEvent(t *testing.T, corr string) *event.Event {
	t.Helper()
	req := contracts.Request{PRID: "acme/widgets#5", Repo: "acme/widgets", PRNumber: 5, SourceBranch: "f", TargetBranch: "main",
		HeadSHA: "0123456789abcdef0123456789abcdef01234567", Strategy: "merge", Title: "t", RequestedBy: "alice"}
	e, err := contracts.New(corr+".m", contracts.TypeMerged, contracts.Source(contracts.ServiceMerger), req.PRID, time.Now(),
		contracts.Merged{Request: req, MergeSHA: "89abcdef0123456789abcdef0123456789abcdef"}, contracts.Meta{CorrelationID: corr, CausationID: corr + ".v", Attempt: 1})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestNotifierDeliversSignedOnceAndRetriesOnlyMissing(t *testing.T) {
	_, b := natstest.Start(t, bus.Config{})
	db := sqlitetest.Open(t, server.Migrations)
	srv, err := server.New(server.Options{DB: db, AllowPrivate: true, Webhook: webhook.Config{MaxAttempts: 1}})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	srv.Routes(mux)
	api := httptest.NewServer(mux)
	defer api.Close()
	ok, down := &receiver{}, &receiver{fail: true}
	okSrv, downSrv := httptest.NewServer(ok), httptest.NewServer(down)
	defer okSrv.Close()
	defer downSrv.Close()
	body, _ := json.Marshal([]map[string]string{{"url": okSrv.URL + "/hook?token=s3cr3t", "secret": "secret-one"}, {"url": downSrv.URL + "/hook", "secret": "secret-two"}})
	req, _ := http.NewRequest(http.MethodPut, api.URL+"/api/v1/repos/acme/widgets/watchers", bytes.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("put watchers: %v %v", err, resp)
	}
	listed, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if bytes.Contains(listed, []byte("s3cr3t")) || bytes.Contains(listed, []byte("secret-one")) || bytes.Contains(listed, []byte("/hook")) {
		t.Errorf("watchers answer leaks a secret: %s", listed)
	}

	run, err := service.Start(context.Background(), srv.Spec(), b, slogDiscard(), service.Options{Backoff: []time.Duration{10 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer run.Stop()
	if err := b.Publish(context.Background(), mergedEvent(t, "run1")); err != nil {
		t.Fatal(err)
	}
	failed := natstest.WaitEvent(t, b, contracts.SubjectStepFailed, 10*time.Second, nil)
	var f contracts.StepFailed
	if err := contracts.Decode(failed, &f); err != nil {
		t.Fatal(err)
	}
	if f.Code != contracts.CodeWebhookFailed || f.Step != contracts.StateNotifying {
		t.Fatalf("got %s at %s, want webhook_failed at NOTIFYING", f.Code, f.Step)
	}
	if bytes.Contains([]byte(f.Reason), []byte("/hook")) {
		t.Errorf("failure reason leaks a webhook path: %s", f.Reason)
	}

	// The receiver comes back; a replay of the same run delivers only to it.
	down.mu.Lock()
	down.fail = false
	down.mu.Unlock()
	replay := mergedEvent(t, "run1")
	replay.SetID("run1.m.replay")
	replay.SetSource(contracts.SourceLedger)
	replay.SetExtension(contracts.ExtReplayOf, "run1.m")
	replay.SetExtension(contracts.ExtAttempt, "2")
	if err := b.Publish(context.Background(), replay); err != nil {
		t.Fatal(err)
	}
	n := natstest.WaitEvent(t, b, contracts.SubjectNotified, 10*time.Second, nil)
	var got contracts.Notified
	if err := contracts.Decode(n, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Deliveries) != 2 {
		t.Fatalf("got %d deliveries, want 2: %+v", len(got.Deliveries), got.Deliveries)
	}
	ok.mu.Lock()
	down.mu.Lock()
	defer ok.mu.Unlock()
	defer down.mu.Unlock()
	if len(ok.got) != 1 || len(down.got) != 1 {
		t.Fatalf("deliveries: ok receiver %d, recovered receiver %d; want 1 each", len(ok.got), len(down.got))
	}
	if !webhook.Verify([]byte("secret-one"), ok.bodies[0], ok.got[0].Get("X-Prsaga-Signature")) {
		t.Errorf("signature does not verify")
	}
	if ok.got[0].Get("X-Prsaga-Delivery") == "" || ok.got[0].Get("X-Prsaga-Delivery") == down.got[0].Get("X-Prsaga-Delivery") {
		t.Errorf("delivery ids: %q and %q, want set and distinct per watcher", ok.got[0].Get("X-Prsaga-Delivery"), down.got[0].Get("X-Prsaga-Delivery"))
	}
}
