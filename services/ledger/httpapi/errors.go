package httpapi

import (
	"errors"
	"net/http"
	"strings"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/httpx"
	"github.com/prsaga/prsaga/services/ledger"
)

// fail answers err: the one place domain errors become statuses.
func (a *API) fail(w http.ResponseWriter, r *http.Request, err error) {
	var he *httpx.Error
	var inv invalid
	switch {
	case errors.As(err, &inv):
		writeInvalid(w, inv.summary, inv.err)
	case errors.As(err, &he):
		httpx.WriteError(w, he)
	case errors.Is(err, ledger.ErrKeyReused):
		httpx.WriteJSON(w, http.StatusUnprocessableEntity, map[string]string{"error": err.Error()})
	case errors.Is(err, ledger.ErrNotFound):
		httpx.WriteJSON(w, http.StatusNotFound, map[string]string{"error": "no saga for " + truncate(r.PathValue("pr"))})
	case errors.Is(err, contracts.ErrInvalid), errors.Is(err, ledger.ErrBadCursor):
		writeInvalid(w, "", err)
	default:
		a.log().ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		httpx.WriteError(w, err)
	}
}

// fieldProblem is one invalid field of a request.
type fieldProblem struct {
	Field   string `json:"field"`
	Problem string `json:"problem"`
}

// writeInvalid answers 400 naming every bad field: {"error": "...", "fields": [...]}.
func writeInvalid(w http.ResponseWriter, prefix string, err error) {
	var fields []fieldProblem
	var msgs []string
	for _, e := range flatten(err) {
		msgs = append(msgs, e.Error())
		var fe *contracts.FieldError
		if errors.As(e, &fe) {
			fields = append(fields, fieldProblem{Field: fe.Field, Problem: fe.Problem})
		}
	}
	msg := strings.Join(msgs, "; ")
	if prefix != "" {
		msg = prefix + ": " + msg
	}
	body := map[string]any{"error": msg}
	if len(fields) > 0 {
		body["fields"] = fields
	}
	httpx.WriteJSON(w, http.StatusBadRequest, body)
}

// flatten lists the leaves of a tree of joined errors.
func flatten(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}
