// Package client talks to a prsaga API (PRSAGA_API_URL) for the CLI's
// client verbs and the demo.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/prsaga/prsaga/contracts"
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

// Transition is one row of a saga's history.
type Transition struct {
	Seq       int       `json:"seq"`
	FromState string    `json:"from_state"`
	ToState   string    `json:"to_state"`
	Reason    string    `json:"reason"`
	EventID   string    `json:"event_id"`
	Inferred  bool      `json:"inferred"`
	At        time.Time `json:"at"`
}

// Saga is the ledger's view of one PR.
type Saga struct {
	PRID          string       `json:"pr_id"`
	Repo          string       `json:"repo"`
	State         string       `json:"state"`
	FailedStep    string       `json:"failed_step"`
	LastError     string       `json:"last_error"`
	Attempts      int          `json:"attempts"`
	MergeSHA      string       `json:"merge_sha"`
	Merged        bool         `json:"merged"`
	CorrelationID string       `json:"correlation_id"`
	CreatedAt     time.Time    `json:"created_at"`
	UpdatedAt     time.Time    `json:"updated_at"`
	Transitions   []Transition `json:"transitions,omitempty"`
}

// Terminal reports whether the saga stopped (MERGED or MERGE_FAILED).
func (s Saga) Terminal() bool {
	return s.State == string(contracts.StateMerged) || s.State == string(contracts.StateMergeFailed)
}

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
	var out Accepted
	err := c.do(ctx, http.MethodPost, "/api/v1/merge-requests", r, &out)
	return out, err
}

// Saga returns one saga with its transitions.
func (c *Client) Saga(ctx context.Context, prID string) (Saga, error) {
	var out Saga
	err := c.do(ctx, http.MethodGet, "/api/v1/sagas/"+url.PathEscape(prID), nil, &out)
	return out, err
}

// List returns a page of sagas.
func (c *Client) List(ctx context.Context, state, repo, cursor string, limit int) (List, error) {
	q := url.Values{}
	if state != "" {
		q.Set("state", state)
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
	var out List
	err := c.do(ctx, http.MethodGet, "/api/v1/sagas?"+q.Encode(), nil, &out)
	return out, err
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

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
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
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, c.BaseURL, err)
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
