// Package webhook delivers the notifier's webhooks: it signs a body
// (X-Prsaga-Signature: sha256=<hex hmac>), names a delivery so receivers can
// drop duplicates (X-Prsaga-Delivery, stable per correlation id and watcher),
// and POSTs it with bounded retries.
//
// A webhook URL is a secret (its path or query often carries a token), so
// nothing here ever prints more of it than scheme://host: see Redact. The
// Sender refuses, at dial time, to connect to loopback, private, link-local
// and other non-public addresses unless Config.AllowPrivate is set, so a
// watcher cannot turn the notifier into a probe of the internal network,
// not even by a DNS name that later resolves somewhere else.
package webhook
