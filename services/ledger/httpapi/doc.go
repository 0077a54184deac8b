// Package httpapi is the ledger's operator surface over HTTP: the saga API
// (list, one saga with its history, its events, counts per state), the
// merge-request intake that publishes requested events through the
// ledger's outbox, and a small server-rendered dashboard.
//
// PR ids travel in paths URL-escaped as one segment ("acme%2Fwidgets%2342");
// every id is validated before it reaches a query. Errors are JSON
// {"error": "..."}, mapped from domain errors in one place (fail).
package httpapi
