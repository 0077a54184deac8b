// Package server assembles the ledger service for cmd/prsaga: the
// projection consumer (every saga event, never given up on) over the
// service's SQLite database, its outbox relay through service.Start, the
// watchdog (StartWatchdog) and the HTTP routes of the API and dashboard.
package server
