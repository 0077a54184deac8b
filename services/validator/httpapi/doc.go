// Package httpapi serves the validator's forge-like API (design §6): CI
// systems post commit statuses, operators set the contexts a target branch
// requires. Every id in a path or body is validated before it reaches a
// query; errors are {"error": "..."} with a 4xx that names the problem.
package httpapi
