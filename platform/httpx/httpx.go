// Package httpx holds what every service's HTTP routes share: JSON answers,
// the one error shape {"error": "..."}, size-limited JSON decoding and bearer
// token checks.
package httpx

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// MaxBody bounds request bodies.
const MaxBody = 1 << 20

// Error is an API error with its HTTP status.
type Error struct {
	Status  int
	Message string
}

func (e *Error) Error() string { return e.Message }

// Errorf builds an API error.
func Errorf(status int, format string, args ...any) *Error {
	return &Error{Status: status, Message: fmt.Sprintf(format, args...)}
}

// WriteJSON answers v as JSON with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	// Encoded before the status is sent: a value that cannot be encoded
	// (a NaN, say) is answered with a 500, never an empty 200.
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error": "internal error: the answer could not be encoded"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// WriteError answers err as {"error": "..."}: an *Error with its status,
// anything else as a 500 with a generic message (details go to the log).
func WriteError(w http.ResponseWriter, err error) {
	var e *Error
	if errors.As(err, &e) {
		WriteJSON(w, e.Status, map[string]string{"error": e.Message})
		return
	}
	WriteJSON(w, http.StatusInternalServerError, map[string]string{"error": "internal error"})
}

// DecodeJSON reads a size-limited JSON body into v, refusing unknown
// content types, trailing data and oversize bodies with a 4xx.
func DecodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		return Errorf(http.StatusUnsupportedMediaType, "Content-Type %q is not application/json", ct)
	}
	body := http.MaxBytesReader(w, r.Body, MaxBody)
	dec := json.NewDecoder(body)
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return Errorf(http.StatusRequestEntityTooLarge, "request body exceeds %d bytes", MaxBody)
		}
		return Errorf(http.StatusBadRequest, "request body is not valid JSON: %s", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Errorf(http.StatusBadRequest, "request body has data after the JSON value")
	}
	return nil
}

// Tokens are the bearer tokens that may call mutating routes. A zero value
// (no token configured) lets every caller through: allowed only on a
// loopback listener, which the server checks at start.
type Tokens []string

// Require wraps h so that it needs one of the tokens (operator tokens).
func (t Tokens) Require(h http.HandlerFunc) http.HandlerFunc {
	return t.RequireWith(WriteRefusal, h)
}

// WriteRefusal and StatusRefusal are the 401 answers of the operator's
// routes and of posting a commit status.
const (
	WriteRefusal  = "missing or wrong bearer token: send Authorization: Bearer <token> with the value of PRSAGA_API_TOKEN"
	StatusRefusal = "missing or wrong bearer token: send Authorization: Bearer <token> with the value of PRSAGA_STATUS_TOKEN or PRSAGA_API_TOKEN"
)

// ReadRefusal is the 401 answer of a read route: it names the header and
// the settings that hold the tokens.
const ReadRefusal = "reading needs a token: send Authorization: Bearer <token> with the value of PRSAGA_READ_TOKEN or PRSAGA_API_TOKEN"

// RequireRead wraps a read route (t: the read and the API tokens). With
// none configured it is open, like every route (loopback listeners only).
func (t Tokens) RequireRead(h http.HandlerFunc) http.HandlerFunc {
	return t.RequireWith(ReadRefusal, h)
}

// RequireWith wraps h so that it needs one of the tokens, answering msg
// with a 401 otherwise.
func (t Tokens) RequireWith(msg string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !t.Allowed(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="prsaga"`)
			WriteError(w, Errorf(http.StatusUnauthorized, "%s", msg))
			return
		}
		h(w, r)
	}
}

// Set reports whether any token is configured.
func (t Tokens) Set() bool {
	for _, tok := range t {
		if tok != "" {
			return true
		}
	}
	return false
}

// Allowed reports whether the request carries one of the tokens, compared
// in constant time.
func (t Tokens) Allowed(r *http.Request) bool {
	var want []string
	for _, tok := range t {
		if tok != "" {
			want = append(want, tok)
		}
	}
	if len(want) == 0 {
		return true
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return false
	}
	match := 0
	for _, tok := range want {
		match |= subtle.ConstantTimeCompare([]byte(got), []byte(tok))
	}
	return match == 1
}
