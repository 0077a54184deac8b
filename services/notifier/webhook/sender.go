package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/prsaga/prsaga/platform/backoff"
	"github.com/prsaga/prsaga/platform/fault"
)

// Defaults of Config.
const (
	DefaultTimeout     = 10 * time.Second
	DefaultMaxAttempts = 3
	DefaultUserAgent   = "prsaga-webhook/1"
)

// Caps on what a receiver's answer may make the Sender read: the status
// line and headers (net/http refuses more), and the body, which is read
// only to let the connection be reused and never beyond MaxResponseBody.
const (
	MaxResponseHeaderBytes = 64 << 10
	MaxResponseBody        = 64 << 10
)

// DefaultBackoff is the wait before the second and the third attempt.
var DefaultBackoff = []time.Duration{200 * time.Millisecond, time.Second}

// ErrPermanent is matched (errors.Is) by a Send error that retrying the same
// delivery will not cure: an invalid URL or delivery id, a refused address,
// a redirect, or a 4xx answer other than 408 and 429.
var ErrPermanent = errors.New("permanent webhook failure")

// Config configures a Sender. The zero value works: 3 attempts, 200ms then
// 1s between them, 10s per attempt, public receivers only.
type Config struct {
	// Client sends the requests. Nil means a client with DefaultTimeout; a
	// client with a zero Timeout gets DefaultTimeout too, so one hanging
	// receiver cannot hold a delivery forever. The Sender uses a copy and
	// never follows redirects. Its transport is a clone of Client.Transport
	// (nil or an *http.Transport; any other RoundTripper is used as is,
	// which needs AllowPrivate) capping the answer's headers at
	// MaxResponseHeaderBytes; unless AllowPrivate is set, its dialer is
	// replaced by the address guard and it uses no proxy (through a proxy
	// the guard would only see the proxy's address).
	Client *http.Client
	// MaxAttempts bounds the requests of one Send; 0 means DefaultMaxAttempts.
	MaxAttempts int
	// Backoff[i] is the wait after attempt i+1 fails, jittered down by up to
	// backoff.Spread (never longer); the last entry repeats.
	// Empty means DefaultBackoff.
	Backoff []time.Duration
	// AllowPrivate lets the Sender connect to loopback, private, link-local
	// and other non-public addresses: for tests and local demos only.
	AllowPrivate bool
	// UserAgent is sent with every request; "" means DefaultUserAgent.
	UserAgent string
}

// Budget is the longest one Send may take (receivers answering slowly or
// not at all, every attempt retried): MaxAttempts × the client's per-attempt
// timeout (which covers connecting, the request, and reading the capped
// answer) plus the backoff waits between the attempts. Defaults apply as in
// NewSender.
func (c Config) Budget() time.Duration {
	attempts := c.MaxAttempts
	if attempts <= 0 {
		attempts = DefaultMaxAttempts
	}
	timeout := DefaultTimeout
	if c.Client != nil && c.Client.Timeout > 0 {
		timeout = c.Client.Timeout
	}
	backoff := c.Backoff
	if len(backoff) == 0 {
		backoff = DefaultBackoff
	}
	b := time.Duration(attempts) * timeout
	for i := 1; i < attempts; i++ {
		b += backoff[min(i, len(backoff))-1]
	}
	return b
}

// Validate reports every invalid field, joined.
func (c Config) Validate() error {
	var errs []error
	if c.MaxAttempts < 0 {
		errs = append(errs, fmt.Errorf("webhook max attempts is %d (at least 1, or 0 for the default)", c.MaxAttempts))
	}
	for i, d := range c.Backoff {
		if d < 0 {
			errs = append(errs, fmt.Errorf("webhook backoff[%d] is negative (%s)", i, d))
		}
	}
	if c.Client != nil && c.Client.Timeout < 0 {
		errs = append(errs, fmt.Errorf("webhook client timeout is negative (%s)", c.Client.Timeout))
	}
	if c.Client != nil && !c.AllowPrivate {
		switch c.Client.Transport.(type) {
		case nil, *http.Transport:
		default:
			errs = append(errs, fmt.Errorf("webhook client transport is a %T: the address guard needs an *http.Transport (or set AllowPrivate)", c.Client.Transport))
		}
	}
	return errors.Join(errs...)
}

// Sender posts signed webhooks with retries. It is safe for concurrent use.
type Sender struct {
	client      *http.Client
	maxAttempts int
	backoff     []time.Duration
	userAgent   string
}

// NewSender returns a Sender for cfg, with its defaults filled in.
func NewSender(cfg Config) (*Sender, error) {
	fault.Register(fault.MidDelivery)
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Sender{
		client:      &http.Client{Timeout: DefaultTimeout},
		maxAttempts: cfg.MaxAttempts,
		backoff:     append([]time.Duration(nil), cfg.Backoff...),
		userAgent:   cfg.UserAgent,
	}
	if s.maxAttempts == 0 {
		s.maxAttempts = DefaultMaxAttempts
	}
	if len(s.backoff) == 0 {
		s.backoff = append(s.backoff, DefaultBackoff...)
	}
	if s.userAgent == "" {
		s.userAgent = DefaultUserAgent
	}
	if cfg.Client != nil {
		c := *cfg.Client
		if c.Timeout == 0 {
			c.Timeout = DefaultTimeout
		}
		s.client = &c
	}
	// A redirect would re-send (or, for 301-303, drop) the signed body to
	// another URL; a receiver that moved must be re-registered. Not
	// following any redirect also means none can lead to a refused address.
	s.client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	t, err := ownTransport(s.client.Transport, !cfg.AllowPrivate)
	if err != nil {
		return nil, err
	}
	if t != nil {
		s.client.Transport = t
	}
	return s, nil
}

// ownTransport clones rt (nil: http.DefaultTransport) with a cap on the
// answer's headers and, when guard is set, a dialer that refuses
// non-public addresses and no proxy (through a proxy the guard would only
// see the proxy's address). A custom RoundTripper that is no
// *http.Transport is kept as is (nil, nil) when no guard is needed.
func ownTransport(rt http.RoundTripper, guard bool) (*http.Transport, error) {
	base, ok := rt.(*http.Transport)
	if rt == nil {
		base, ok = http.DefaultTransport.(*http.Transport)
	}
	if !ok {
		if guard {
			return nil, fmt.Errorf("webhook client transport is a %T: the address guard needs an *http.Transport", rt)
		}
		return nil, nil
	}
	t := base.Clone()
	t.MaxResponseHeaderBytes = MaxResponseHeaderBytes
	if !guard {
		return t, nil
	}
	t.Proxy = nil
	// Clear every hook that would dial around DialContext.
	t.Dial, t.DialTLS, t.DialTLSContext = nil, nil, nil
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: guardDial}
	t.DialContext = d.DialContext
	return t, nil
}

// Send POSTs body to rawURL as a structured CloudEvent, signed with secret
// and carrying deliveryID, until a 2xx answer, a permanent failure (see
// ErrPermanent), MaxAttempts requests, or the end of ctx. It returns how many
// requests it started. Attempts are retried on 408, 429, 5xx, timeouts and
// connection errors, after the configured backoff. Errors name the receiver
// only by scheme://host (see Redact): never its path, query or user info.
func (s *Sender) Send(ctx context.Context, rawURL, secret string, deliveryID string, body []byte) (attempts int, err error) {
	if err := ValidateURL(rawURL); err != nil {
		return 0, permanent(err)
	}
	if err := validDeliveryID(deliveryID); err != nil {
		return 0, permanent(err)
	}
	host := Redact(rawURL)
	sig := Sign([]byte(secret), body)
	for attempts = 1; ; attempts++ {
		retry, err := s.attempt(ctx, rawURL, sig, deliveryID, body)
		if err == nil {
			// The receiver has it; the notifier has not recorded it, and
			// other watchers of the round may not have it yet. An exit
			// here redelivers the whole round after a restart; an error
			// is an answer lost on the way: the attempt is retried, with
			// the same delivery id.
			if ferr := fault.Hit(fault.MidDelivery); ferr != nil {
				retry, err = true, ferr
			}
		}
		switch {
		case err == nil:
			return attempts, nil
		case !retry:
			return attempts, fmt.Errorf("deliver to %s: attempt %d: %w", host, attempts, err)
		case attempts >= s.maxAttempts:
			return attempts, fmt.Errorf("deliver to %s: gave up after %d attempts: %w", host, attempts, err)
		}
		if werr := s.wait(ctx, attempts); werr != nil {
			return attempts, fmt.Errorf("deliver to %s: %w while waiting to retry (attempt %d: %v)", host, werr, attempts, err)
		}
	}
}

// attempt makes one request. retry reports whether a failure may be retried.
func (s *Sender) attempt(ctx context.Context, rawURL, sig, deliveryID string, body []byte) (retry bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rawURL, bytes.NewReader(body))
	if err != nil {
		return false, permanent(errors.New("cannot build the request")) // the error would quote the URL
	}
	req.Header.Set("Content-Type", ContentType)
	req.Header.Set("User-Agent", s.userAgent)
	req.Header.Set(HeaderSignature, sig)
	req.Header.Set(HeaderDelivery, deliveryID)
	resp, err := s.client.Do(req)
	if err != nil {
		err = withoutURL(err)
		return !errors.Is(err, ErrPermanent) && ctx.Err() == nil, err
	}
	defer func() {
		// Drain a little so the connection can be reused; a receiver's
		// answer is not read beyond that (closing a body not read to its
		// end drops the connection).
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, MaxResponseBody))
		_ = resp.Body.Close()
	}()
	code := resp.StatusCode
	switch {
	case code >= 200 && code < 300:
		return false, nil
	case code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500:
		return true, &StatusError{StatusCode: code}
	default:
		return false, permanent(&StatusError{StatusCode: code})
	}
}

// wait sleeps the backoff after the given attempt, jittered (so that the
// deliveries that failed together — one receiver down — come back spread
// out) and never longer than configured (Budget holds), or until ctx ends.
func (s *Sender) wait(ctx context.Context, attempt int) error {
	d := backoff.Jitter(s.backoff[min(attempt, len(s.backoff))-1])
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// StatusError is a receiver's answer other than 2xx.
type StatusError struct {
	StatusCode int
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("receiver answered %d %s", e.StatusCode, http.StatusText(e.StatusCode))
}

// withoutURL drops the *url.Error layer of a client error: its message
// quotes the whole URL, and a webhook URL is a secret.
func withoutURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// permanentError marks an error as not worth retrying without changing its
// message.
type permanentError struct{ err error }

func permanent(err error) error { return &permanentError{err: err} }

func (e *permanentError) Error() string        { return e.err.Error() }
func (e *permanentError) Unwrap() error        { return e.err }
func (e *permanentError) Is(target error) bool { return target == ErrPermanent }

// validDeliveryID accepts 1-128 characters of [A-Za-z0-9._:-]: DeliveryID's
// hex ids and "<correlation>.<watcher>" forms alike, nothing that could
// break a header.
func validDeliveryID(id string) error {
	if id == "" || len(id) > 128 {
		return fmt.Errorf("delivery id must be 1-128 characters, got %d", len(id))
	}
	for _, r := range id {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9', r == '.', r == '_', r == ':', r == '-':
		default:
			return fmt.Errorf("delivery id contains %q (only letters, digits and ._:- are allowed)", r)
		}
	}
	return nil
}
