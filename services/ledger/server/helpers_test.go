package server_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/service"
	"github.com/prsaga/prsaga/services/ledger/server"
)

// startSpec runs srv's consumer and outbox relay on b until the test ends,
// retrying a failed message after backoff.
func startSpec(t *testing.T, srv *server.Server, b *bus.Bus, log *slog.Logger, backoff time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	run, err := service.Start(ctx, srv.Spec(), b, log, service.Options{Backoff: []time.Duration{backoff}, RelayPoll: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(run.Stop)
}

// serve serves srv's routes until the test ends.
func serve(t *testing.T, srv *server.Server) *httptest.Server {
	mux := http.NewServeMux()
	srv.Routes(mux)
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	return hs
}
