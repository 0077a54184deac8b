package httpapi

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/httpx"
	"github.com/prsaga/prsaga/services/ledger"
)

// retryOptions are the switches of a retry: ?force=&dry_run= or a JSON body
// {"force": true, "dry_run": true} (either may be used; both are or'ed).
type retryOptions struct {
	Force  bool `json:"force"`
	DryRun bool `json:"dry_run"`
}

// retryAccepted is the 202 (or, for a dry run, 200) answer.
type retryAccepted struct {
	EventID       string          `json:"event_id"`
	EventType     string          `json:"event_type"`
	ReplayOf      string          `json:"replay_of"`
	PRID          string          `json:"pr_id"`
	CorrelationID string          `json:"correlation_id"`
	Step          contracts.State `json:"step"`
	Attempt       int             `json:"attempt"`
	Actor         string          `json:"actor"`
	DryRun        bool            `json:"dry_run,omitempty"`
	// Event is the replay, shown on a dry run.
	Event json.RawMessage `json:"event,omitempty"`
}

// maxIdempotencyKey bounds the Idempotency-Key header.
const maxIdempotencyKey = 128

// postRetry is POST /api/v1/sagas/{pr}/retry: 202 with the replayed
// event's id, 409 when the saga cannot be retried (or another retry won),
// 200 with the event that would be sent on a dry run.
func (a *API) postRetry(w http.ResponseWriter, r *http.Request) {
	pr, err := prOf(r)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	opts, err := retryOptionsOf(w, r)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	key := r.Header.Get("Idempotency-Key")
	if err := validKey(key); err != nil {
		a.fail(w, r, err)
		return
	}
	ans, err := a.Retrier.Retry(r.Context(), ledger.RetryRequest{
		PRID: pr, Actor: a.actor(r), Force: opts.Force, DryRun: opts.DryRun, IdempotencyKey: key,
	})
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeRetry(w, ans)
}

func writeRetry(w http.ResponseWriter, ans ledger.RetryAnswer) {
	if ans.Repeated {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	if !ans.Accepted {
		httpx.WriteJSON(w, http.StatusConflict, map[string]any{"error": ans.Refused, "pr_id": ans.PRID, "needs_force": ans.NeedsForce})
		return
	}
	rp := ans.Replay
	out := retryAccepted{EventID: rp.EventID, EventType: rp.EventType, ReplayOf: rp.ReplayOf, PRID: ans.PRID,
		CorrelationID: rp.CorrelationID, Step: rp.Step, Attempt: rp.Attempt, Actor: rp.Actor}
	if ans.DryRun {
		out.DryRun, out.Event = true, rp.Event
		httpx.WriteJSON(w, http.StatusOK, out)
		return
	}
	httpx.WriteJSON(w, http.StatusAccepted, out)
}

func retryOptionsOf(w http.ResponseWriter, r *http.Request) (retryOptions, error) {
	var o retryOptions
	q := r.URL.Query()
	for name, dst := range map[string]*bool{"force": &o.Force, "dry_run": &o.DryRun} {
		if v := q.Get(name); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return o, &contracts.FieldError{Field: name, Problem: "must be true or false"}
			}
			*dst = b
		}
	}
	if r.Body == nil || r.ContentLength == 0 {
		return o, nil
	}
	var body retryOptions
	if err := httpx.DecodeJSON(w, r, &body); err != nil {
		var he *httpx.Error
		if errors.As(err, &he) && strings.Contains(he.Message, "EOF") {
			return o, nil // an empty chunked body
		}
		return o, err
	}
	o.Force, o.DryRun = o.Force || body.Force, o.DryRun || body.DryRun
	return o, nil
}

// validKey checks an Idempotency-Key: printable ASCII, at most 128 bytes.
func validKey(k string) error {
	if len(k) > maxIdempotencyKey {
		return &contracts.FieldError{Field: "Idempotency-Key", Problem: "is longer than 128 bytes"}
	}
	for _, c := range k {
		if c < '!' || c > '~' {
			return &contracts.FieldError{Field: "Idempotency-Key", Problem: "must be printable ASCII without spaces"}
		}
	}
	return nil
}

// actor names who calls a mutating API route: the matching token's name,
// or "local" when no token is configured.
func (a *API) actor(r *http.Request) string {
	got, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if name, ok := a.tokenName(got); ok {
		return name
	}
	return "local"
}

// tokenName finds the configured token equal to tok (each compared in
// constant time) and returns its name; ok is false when no token is
// configured or none matches.
func (a *API) tokenName(tok string) (name string, ok bool) {
	found := -1
	for i, want := range a.Tokens {
		if want != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(want)) == 1 {
			found = i
		}
	}
	if found < 0 {
		return "", false
	}
	if found < len(a.TokenNames) && a.TokenNames[found] != "" {
		return a.TokenNames[found], true
	}
	return "operator", true
}

// guarded reports whether operator tokens are configured.
func (a *API) guarded() bool {
	for _, t := range a.Tokens {
		if t != "" {
			return true
		}
	}
	return false
}
