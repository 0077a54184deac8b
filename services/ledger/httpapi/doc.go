// Package httpapi is the ledger's operator surface over HTTP: the saga API
// (list with state/repo/stuck filters and cursors, one saga with its
// history, its events, a run by correlation id, stats), retries, the
// merge-request intake that publishes requested events through the
// ledger's outbox, and a server-rendered dashboard whose retry forms (one
// saga, or the failed sagas a filter selects: bulkform.go) are guarded by
// a same-site cookie, a CSRF token and Origin/Host checks.
//
// PR ids travel in paths URL-escaped as one segment ("acme%2Fwidgets%2342");
// every id is validated before it reaches a query. Errors are JSON
// {"error": "..."}, mapped from domain errors in one place (fail).
package httpapi
