package webhook

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prsaga/prsaga/platform/backoff"
)

const (
	secret   = "w1-signing-secret"
	hookPath = "/hooks/T0K3N?key=K3Y" // the secret part of a webhook URL
)

var body = []byte(`{"specversion":"1.0","id":"e1","type":"prsaga.merge.merged.v1"}`)

// received is one request as the receiver saw it.
type received struct {
	header   http.Header
	body     []byte
	verified bool // the signature checks out with secret
	at       time.Time
}

// receiver is a real HTTP server that records what it receives and answers
// with respond(n), n counting requests from 1.
type receiver struct {
	srv   *httptest.Server
	conns atomic.Int32
	mu    sync.Mutex
	reqs  []received
}

func newReceiver(t *testing.T, respond func(n int, w http.ResponseWriter, r *http.Request)) *receiver {
	t.Helper()
	rc := &receiver{}
	rc.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("receiver: read body: %v", err)
		}
		rc.mu.Lock()
		rc.reqs = append(rc.reqs, received{r.Header.Clone(), b, Verify([]byte(secret), b, r.Header.Get(HeaderSignature)), time.Now()})
		n := len(rc.reqs)
		rc.mu.Unlock()
		respond(n, w, r)
	}))
	rc.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			rc.conns.Add(1)
		}
	}
	rc.srv.Start()
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) url() string { return rc.srv.URL + hookPath }

func (rc *receiver) requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.reqs...)
}

func status(codes ...int) func(int, http.ResponseWriter, *http.Request) {
	return func(n int, w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(codes[min(n, len(codes))-1])
	}
}

// newSender makes a Sender for loopback receivers with a fast backoff.
func newSender(t *testing.T, cfg Config) *Sender {
	t.Helper()
	if cfg.Backoff == nil {
		cfg.Backoff = []time.Duration{time.Millisecond}
	}
	s, err := NewSender(cfg)
	if err != nil {
		t.Fatalf("NewSender: %v", err)
	}
	return s
}

func send(t *testing.T, s *Sender, url, deliveryID string) (int, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	n, err := s.Send(ctx, url, secret, deliveryID, body)
	checkNoSecret(t, err)
	return n, err
}

// checkNoSecret fails if err quotes the secret parts of hookPath.
// sameDelivery checks that a Send which answered n, err succeeded after
// attempts tries, and that the receiver saw each of them signed and under
// the one delivery id.
func sameDelivery(t *testing.T, rc *receiver, n int, err error, attempts int, delivery string) {
	t.Helper()
	if err != nil || n != attempts {
		t.Fatalf("Send = %d, %v; want %d attempts, nil", n, err, attempts)
	}
	reqs := rc.requests()
	if len(reqs) != attempts {
		t.Fatalf("receiver saw %d requests, want %d", len(reqs), attempts)
	}
	for i, r := range reqs {
		if got := r.header.Get(HeaderDelivery); got != delivery || !r.verified {
			t.Errorf("attempt %d: delivery %q verified=%v, want %s, signed", i, got, r.verified, delivery)
		}
	}
}

func checkNoSecret(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	for _, s := range []string{"T0K3N", "K3Y", "/hooks", "user:pw"} {
		if strings.Contains(err.Error(), s) {
			t.Errorf("error %q contains %q from the webhook URL", err, s)
		}
	}
}

func TestSendSignsAndNamesTheDelivery(t *testing.T) {
	rc := newReceiver(t, status(http.StatusNoContent))
	s := newSender(t, Config{AllowPrivate: true})
	ids := []string{DeliveryID("corr-1", "w1"), DeliveryID("corr-1", "w1"), DeliveryID("corr-1", "w2")}
	for _, id := range ids {
		if n, err := send(t, s, rc.url(), id); err != nil || n != 1 {
			t.Fatalf("Send = %d, %v; want 1, nil", n, err)
		}
	}
	reqs := rc.requests()
	if len(reqs) != 3 {
		t.Fatalf("receiver saw %d requests, want 3", len(reqs))
	}
	for i, r := range reqs {
		if !r.verified {
			t.Errorf("request %d: signature %q does not verify with the shared secret", i, r.header.Get(HeaderSignature))
		}
		if string(r.body) != string(body) {
			t.Errorf("request %d: body %q, want %q", i, r.body, body)
		}
		if got := r.header.Get("Content-Type"); got != ContentType {
			t.Errorf("request %d: Content-Type %q, want %q", i, got, ContentType)
		}
		if got := r.header.Get("User-Agent"); got != DefaultUserAgent {
			t.Errorf("request %d: User-Agent %q, want %q", i, got, DefaultUserAgent)
		}
		if got := r.header.Get(HeaderDelivery); got != ids[i] {
			t.Errorf("request %d: %s %q, want %q", i, HeaderDelivery, got, ids[i])
		}
	}
	if a, b, c := reqs[0].header.Get(HeaderDelivery), reqs[1].header.Get(HeaderDelivery), reqs[2].header.Get(HeaderDelivery); a != b || a == c {
		t.Errorf("delivery ids %q, %q (same watcher), %q (other watcher): want the first two equal, the third different", a, b, c)
	}
	if Verify([]byte("another secret"), reqs[0].body, reqs[0].header.Get(HeaderSignature)) {
		t.Errorf("signature verifies with another secret")
	}
}

func TestSendRetriesServerErrors(t *testing.T) {
	rc := newReceiver(t, status(500, 500, 200))
	s := newSender(t, Config{AllowPrivate: true})
	n, err := send(t, s, rc.url(), "d1")
	sameDelivery(t, rc, n, err, 3, "d1")
}

func TestSendStatuses(t *testing.T) {
	redirect := func(_ int, w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/elsewhere", http.StatusTemporaryRedirect)
	}
	for _, tc := range []struct {
		name      string
		respond   func(int, http.ResponseWriter, *http.Request)
		attempts  int
		ok        bool
		permanent bool
	}{
		{"404 is permanent", status(404, 200), 1, false, true},
		{"400 is permanent", status(400, 200), 1, false, true},
		{"410 is permanent", status(410, 200), 1, false, true},
		{"redirect is not followed", redirect, 1, false, true},
		{"408 is retried", status(408, 200), 2, true, false},
		{"429 is retried", status(429, 202), 2, true, false},
		{"503 until the end", status(503), 3, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := newReceiver(t, tc.respond)
			n, err := send(t, newSender(t, Config{AllowPrivate: true}), rc.url(), "d1")
			if n != tc.attempts || (err == nil) != tc.ok {
				t.Fatalf("Send = %d, %v; want %d attempts, ok=%v", n, err, tc.attempts, tc.ok)
			}
			if got := len(rc.requests()); got != tc.attempts {
				t.Errorf("receiver saw %d requests, want %d", got, tc.attempts)
			}
			if errors.Is(err, ErrPermanent) != tc.permanent {
				t.Errorf("errors.Is(%v, ErrPermanent) = %v, want %v", err, !tc.permanent, tc.permanent)
			}
			var se *StatusError
			if !tc.ok && !errors.As(err, &se) {
				t.Errorf("error %v is not a *StatusError", err)
			}
		})
	}
}

func TestSendBacksOff(t *testing.T) {
	const pause = 50 * time.Millisecond
	rc := newReceiver(t, status(500, 200))
	n, err := send(t, newSender(t, Config{AllowPrivate: true, Backoff: []time.Duration{pause}}), rc.url(), "d1")
	if err != nil || n != 2 {
		t.Fatalf("Send = %d, %v; want 2, nil", n, err)
	}
	reqs := rc.requests()
	// The backoff is jittered down by up to backoff.Spread, never up.
	if gap, least := reqs[1].at.Sub(reqs[0].at), pause-time.Duration(float64(pause)*backoff.Spread); gap < least {
		t.Errorf("second attempt came %s after the first, want at least %s (the %s backoff, jittered)", gap, least, pause)
	}
}

func TestSendGivesUpOnAHangingReceiver(t *testing.T) {
	release := make(chan struct{})
	rc := newReceiver(t, func(_ int, _ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done(): // the client gave up and closed the connection
		case <-release:
		}
	})
	t.Cleanup(func() { close(release) }) // runs before rc.srv.Close, which waits for handlers
	const timeout = 100 * time.Millisecond
	s := newSender(t, Config{AllowPrivate: true, Client: &http.Client{Timeout: timeout}})
	start := time.Now()
	n, err := send(t, s, rc.url(), "d1")
	if err == nil || n != DefaultMaxAttempts {
		t.Fatalf("Send = %d, %v; want %d attempts and an error", n, err, DefaultMaxAttempts)
	}
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("error %v is not a timeout", err)
	}
	if errors.Is(err, ErrPermanent) {
		t.Errorf("a timeout is reported as permanent: %v", err)
	}
	if got := len(rc.requests()); got != DefaultMaxAttempts {
		t.Errorf("receiver saw %d requests, want %d", got, DefaultMaxAttempts)
	}
	if d := time.Since(start); d < DefaultMaxAttempts*timeout || d > 10*time.Second {
		t.Errorf("Send took %s, want about %d × %s", d, DefaultMaxAttempts, timeout)
	}
}

func TestSendRetriesConnectionErrors(t *testing.T) {
	rc := newReceiver(t, status(200))
	url := rc.url()
	rc.srv.Close() // nothing listens there any more
	n, err := send(t, newSender(t, Config{AllowPrivate: true}), url, "d1")
	if err == nil || n != DefaultMaxAttempts || errors.Is(err, ErrPermanent) {
		t.Fatalf("Send = %d, %v; want %d attempts and a retryable error", n, err, DefaultMaxAttempts)
	}
}

func TestSendRefusesPrivateAddresses(t *testing.T) {
	rc := newReceiver(t, status(200))
	s := newSender(t, Config{}) // AllowPrivate: false
	localhost := strings.Replace(rc.url(), "127.0.0.1", "localhost", 1)
	for _, url := range []string{rc.url(), localhost} {
		n, err := send(t, s, url, "d1")
		if !errors.Is(err, ErrPrivateAddress) || !errors.Is(err, ErrPermanent) {
			t.Errorf("Send to %s = %v, want ErrPrivateAddress (permanent)", Redact(url), err)
		}
		if n != 1 {
			t.Errorf("Send to %s made %d attempts, want 1 (refusals are not retried)", Redact(url), n)
		}
	}
	if got := len(rc.requests()); got != 0 {
		t.Errorf("receiver saw %d requests, want none", got)
	}
	if got := rc.conns.Load(); got != 0 {
		t.Errorf("receiver accepted %d connections, want none: the guard must refuse before connecting", got)
	}
}

func TestSendBackoffEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	rc := newReceiver(t, status(http.StatusServiceUnavailable))
	// The caller gives up right after the first answer arrived, so Send is
	// in its hour-long backoff when the context ends.
	cancelAfterAnswer := roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := http.DefaultTransport.RoundTrip(r)
		cancel()
		return resp, err
	})
	s := newSender(t, Config{
		AllowPrivate: true,
		Client:       &http.Client{Transport: cancelAfterAnswer},
		Backoff:      []time.Duration{time.Hour},
	})
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := s.Send(ctx, rc.url(), secret, "d1", body)
		done <- result{n, err}
	}()
	select {
	case r := <-done:
		if r.n != 1 || !errors.Is(r.err, context.Canceled) || !strings.Contains(r.err.Error(), "waiting to retry") {
			t.Errorf("Send = %d, %v; want 1 attempt and context.Canceled while waiting to retry", r.n, r.err)
		}
		checkNoSecret(t, r.err)
	case <-time.After(10 * time.Second):
		t.Fatal("Send still waiting out an hour of backoff after its context was cancelled")
	}
}

func TestSendRejectsBadInput(t *testing.T) {
	rc := newReceiver(t, status(200))
	s := newSender(t, Config{AllowPrivate: true})
	for name, tc := range map[string]struct{ url, id string }{
		"userinfo":     {strings.Replace(rc.url(), "http://", "http://user:pw@", 1), "d1"},
		"scheme":       {strings.Replace(rc.url(), "http://", "gopher://", 1), "d1"},
		"header break": {rc.url(), "d1\r\nX-Evil: 1"},
		"empty id":     {rc.url(), ""},
	} {
		n, err := send(t, s, tc.url, tc.id)
		if n != 0 || !errors.Is(err, ErrPermanent) {
			t.Errorf("%s: Send = %d, %v; want 0 attempts and a permanent error", name, n, err)
		}
	}
	if got := len(rc.requests()); got != 0 {
		t.Errorf("receiver saw %d requests, want none", got)
	}
}

func TestConfigValidate(t *testing.T) {
	err := Config{
		MaxAttempts: -1,
		Backoff:     []time.Duration{-time.Second},
		Client:      &http.Client{Transport: roundTripperFunc(nil)},
	}.Validate()
	for _, want := range []string{"max attempts", "backoff[0]", "transport"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want a problem with %s", err, want)
		}
	}
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("zero Config: Validate() = %v, want nil", err)
	}
	if err := (Config{AllowPrivate: true, Client: &http.Client{Transport: roundTripperFunc(nil)}}).Validate(); err != nil {
		t.Errorf("custom transport with AllowPrivate: Validate() = %v, want nil", err)
	}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A receiver that answers 200 with an endless body (or a huge one) does not
// keep the Sender reading: it stops after MaxResponseBody and the
// delivery counts as done, well inside the client's timeout.
func TestSendCapsTheAnswer(t *testing.T) {
	var written atomic.Int64
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		chunk := []byte(strings.Repeat("x", 32<<10))
		for r.Context().Err() == nil {
			n, err := w.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
	})
	const timeout = 5 * time.Second
	s := newSender(t, Config{AllowPrivate: true, Client: &http.Client{Timeout: timeout}})
	start := time.Now()
	n, err := send(t, s, rc.url(), "d1")
	if err != nil || n != 1 {
		t.Fatalf("Send = %d, %v; want 1, nil", n, err)
	}
	if d := time.Since(start); d > timeout/2 {
		t.Errorf("Send took %s reading an endless answer; want it to stop after %d bytes", d, MaxResponseBody)
	}

	// Headers beyond the cap fail the attempt (retried, then given up).
	big := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		for i := range 40 {
			w.Header().Set(fmt.Sprintf("X-Filler-%d", i), strings.Repeat("y", 4<<10))
		}
		w.WriteHeader(http.StatusOK)
	})
	if _, err := send(t, s, big.url(), "d1"); err == nil || !strings.Contains(err.Error(), "header") {
		t.Errorf("Send to a receiver with %d KiB of headers = %v; want an error about the headers", 160, err)
	}
}

func TestConfigBudget(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want time.Duration
	}{
		{"defaults", Config{}, 3*DefaultTimeout + 200*time.Millisecond + time.Second},
		{"explicit", Config{MaxAttempts: 4, Client: &http.Client{Timeout: 2 * time.Second}, Backoff: []time.Duration{time.Second, 5 * time.Second}},
			4*2*time.Second + time.Second + 5*time.Second + 5*time.Second},
		{"one attempt waits no backoff", Config{MaxAttempts: 1, Client: &http.Client{Timeout: time.Second}}, time.Second},
		{"zero client timeout is the default", Config{MaxAttempts: 1, Client: &http.Client{}}, DefaultTimeout},
	} {
		if got := tc.cfg.Budget(); got != tc.want {
			t.Errorf("%s: Budget() = %s, want %s", tc.name, got, tc.want)
		}
	}
}

// Budget really bounds Send against a receiver that never answers.
func TestSendStaysInsideItsBudget(t *testing.T) {
	release := make(chan struct{})
	rc := newReceiver(t, func(_ int, _ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	t.Cleanup(func() { close(release) })
	cfg := Config{AllowPrivate: true, MaxAttempts: 3, Client: &http.Client{Timeout: 100 * time.Millisecond}, Backoff: []time.Duration{50 * time.Millisecond}}
	start := time.Now()
	if _, err := send(t, newSender(t, cfg), rc.url(), "d1"); err == nil {
		t.Fatal("Send to a silent receiver succeeded")
	}
	if d := time.Since(start); d > cfg.Budget()+time.Second {
		t.Errorf("Send took %s; its budget is %s", d, cfg.Budget())
	}
}
