// Package httpapi serves the indexer's search route (design §6):
// GET /api/v1/search over the bleve index of merged pull requests. Its
// parameters are checked before they reach the index; errors are
// {"error": "..."} with a 4xx that names the problem, or a 503 while the
// index is not open.
package httpapi
