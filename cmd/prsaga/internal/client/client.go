// Package client talks to a prsaga API (PRSAGA_API_URL) for the CLI's
// client verbs and the demo.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/services/ledger"
)

// Client of the prsaga HTTP API.
type Client struct {
	BaseURL string
	Token   string
	HTTP    *http.Client
}

// New returns a client with a bounded HTTP timeout.
func New(baseURL, token string) *Client {
	return &Client{BaseURL: baseURL, Token: token, HTTP: &http.Client{Timeout: 30 * time.Second}}
}

// APIError is a non-2xx answer.
type APIError struct {
	Status  int
	Message string
}

func (e *APIError) Error() string { return fmt.Sprintf("%s (HTTP %d)", e.Message, e.Status) }

// The ledger's views of sagas and runs, decoded as the ledger writes them
// (not copies that could drift from its JSON).
type (
	Saga       = ledger.Saga
	Transition = ledger.Transition
	Run        = ledger.Run
	Event      = ledger.Event
)

// Accepted answers a merge request.
type Accepted struct {
	EventID       string `json:"event_id"`
	CorrelationID string `json:"correlation_id"`
	PRID          string `json:"pr_id"`
}

// List is one page of sagas.
type List struct {
	Sagas      []Saga `json:"sagas"`
	NextCursor string `json:"next_cursor"`
}

// Merge asks the ledger to publish a requested event.
func (c *Client) Merge(ctx context.Context, r contracts.Request) (Accepted, error) {
	return call[Accepted](ctx, c, http.MethodPost, "/api/v1/merge-requests", r)
}

// Saga returns one saga with its transitions.
func (c *Client) Saga(ctx context.Context, prID string) (Saga, error) {
	return call[Saga](ctx, c, http.MethodGet, "/api/v1/sagas/"+url.PathEscape(prID), nil)
}

// Filter selects sagas to list.
type Filter struct {
	State, Repo, Cursor string
	Stuck               bool
	Limit               int
}

// List returns a page of sagas.
func (c *Client) List(ctx context.Context, state, repo, cursor string, limit int) (List, error) {
	return c.ListFiltered(ctx, Filter{State: state, Repo: repo, Cursor: cursor, Limit: limit})
}

// ListFiltered returns a page of sagas.
func (c *Client) ListFiltered(ctx context.Context, f Filter) (List, error) {
	state, repo, cursor, limit := f.State, f.Repo, f.Cursor, f.Limit
	q := url.Values{}
	if state != "" {
		q.Set("state", state)
	}
	if f.Stuck {
		q.Set("stuck", "true")
	}
	if repo != "" {
		q.Set("repo", repo)
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	return call[List](ctx, c, http.MethodGet, "/api/v1/sagas?"+q.Encode(), nil)
}

// RetryOptions are the switches of a retry.
type RetryOptions struct {
	Force, DryRun  bool
	IdempotencyKey string
}

// Retried answers a retry: the replayed trigger event.
type Retried struct {
	EventID       string          `json:"event_id"`
	EventType     string          `json:"event_type"`
	ReplayOf      string          `json:"replay_of"`
	PRID          string          `json:"pr_id"`
	CorrelationID string          `json:"correlation_id"`
	Step          string          `json:"step"`
	Attempt       int             `json:"attempt"`
	Actor         string          `json:"actor"`
	DryRun        bool            `json:"dry_run,omitempty"`
	Event         json.RawMessage `json:"event,omitempty"`
}

// Retry asks the ledger to retry a failed saga; a refusal is an *APIError
// with Status 409.
func (c *Client) Retry(ctx context.Context, prID string, o RetryOptions) (Retried, error) {
	q := url.Values{}
	if o.Force {
		q.Set("force", "true")
	}
	if o.DryRun {
		q.Set("dry_run", "true")
	}
	var h http.Header
	if o.IdempotencyKey != "" {
		h = http.Header{"Idempotency-Key": {o.IdempotencyKey}}
	}
	var out Retried
	err := c.doHeader(ctx, http.MethodPost, "/api/v1/sagas/"+url.PathEscape(prID)+"/retry?"+q.Encode(), nil, &out, h)
	return out, err
}

// Run returns the ledger's transitions and events of a saga run.
func (c *Client) Run(ctx context.Context, correlationID string) (Run, error) {
	return call[Run](ctx, c, http.MethodGet, "/api/v1/runs/"+url.PathEscape(correlationID), nil)
}

// PostStatus records a commit status (what a CI system does).
func (c *Client) PostStatus(ctx context.Context, repo, sha, context_, state string) error {
	body := map[string]string{"context": context_, "state": state}
	return c.do(ctx, http.MethodPost, "/api/v1/repos/"+repo+"/statuses/"+sha, body, nil)
}

// PutWatchers replaces a repository's webhook watchers.
func (c *Client) PutWatchers(ctx context.Context, repo string, watchers []map[string]string) error {
	return c.do(ctx, http.MethodPut, "/api/v1/repos/"+repo+"/watchers", watchers, nil)
}

// Wait polls a saga until it is terminal or ctx ends.
func (c *Client) Wait(ctx context.Context, prID, correlationID string) (Saga, error) {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		s, err := c.Saga(ctx, prID)
		if err == nil && s.Terminal() && (correlationID == "" || s.CorrelationID == correlationID) {
			return s, nil
		}
		select {
		case <-ctx.Done():
			if err != nil {
				return s, fmt.Errorf("waiting for %s: %w (last error: %v)", prID, ctx.Err(), err)
			}
			return s, fmt.Errorf("waiting for %s: %w (state %s)", prID, ctx.Err(), s.State)
		case <-t.C:
		}
	}
}

// call does a request whose answer is a T.
func call[T any](ctx context.Context, c *Client, method, path string, in any) (T, error) {
	var out T
	err := c.do(ctx, method, path, in, &out)
	return out, err
}

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	return c.doHeader(ctx, method, path, in, out, nil)
}

func (c *Client) doHeader(ctx context.Context, method, path string, in, out any, h http.Header) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+path, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		// *url.Error quotes the URL again: name it once.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("%s %s: %w", method, c.BaseURL+path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(data, &e) != nil || e.Error == "" {
			e.Error = http.StatusText(resp.StatusCode)
		}
		return &APIError{Status: resp.StatusCode, Message: e.Error}
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("decode answer of %s %s: %w", method, path, err)
		}
	}
	return nil
}

// BulkRetry is a bulk retry's filter and manner (POST /api/v1/retries).
type BulkRetry struct {
	Step   string    `json:"step,omitempty"`
	Repo   string    `json:"repo,omitempty"`
	Since  time.Time `json:"since,omitzero"`
	Reason string    `json:"reason,omitempty"`
	Limit  int       `json:"limit,omitempty"`
	DryRun bool      `json:"dry_run,omitempty"`
	Force  bool      `json:"force,omitempty"`
	Rate   float64   `json:"rate,omitempty"`
}

// BulkJob is a started bulk retry.
type BulkJob struct {
	ID      string `json:"id"`
	Matched int    `json:"matched"`
	DryRun  bool   `json:"dry_run,omitempty"`
}

// BulkItem is what a bulk retry did with one saga, and BulkReport its
// progress and, once Finished, its summary: the ledger's own types, which
// are the JSON the API answers with.
type (
	BulkItem   = ledger.BulkItem
	BulkReport = ledger.BulkReport
)

// StartBulkRetry starts a bulk retry of the failed sagas r selects.
func (c *Client) StartBulkRetry(ctx context.Context, r BulkRetry) (BulkJob, error) {
	return call[BulkJob](ctx, c, http.MethodPost, "/api/v1/retries", r)
}

// BulkRetryStatus reports a bulk retry's progress.
func (c *Client) BulkRetryStatus(ctx context.Context, id string) (BulkReport, error) {
	return call[BulkReport](ctx, c, http.MethodGet, "/api/v1/retries/"+url.PathEscape(id), nil)
}

// CancelBulkRetry stops a bulk retry after the saga in progress.
func (c *Client) CancelBulkRetry(ctx context.Context, id string) (BulkReport, error) {
	return call[BulkReport](ctx, c, http.MethodDelete, "/api/v1/retries/"+url.PathEscape(id), nil)
}
