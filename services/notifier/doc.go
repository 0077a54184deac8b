// Package notifier is the first step after the pivot: on a merged event it
// delivers the event, signed, to every watcher of the repository, and
// answers notified — or step_failed(NOTIFYING, webhook_failed) naming the
// watchers that still fail. Per-watcher delivery rows make a retry send only
// what is missing; receivers dedupe on the stable delivery id.
//
// Watchers are notified in parallel under one deadline, the step's own
// retry budget (each watcher's attempts, timeouts and backoff: see
// webhook.Config.Budget), so the step's time does not grow with the number
// of watchers and stays inside its timeout (design §4, §8).
//
// The package is the domain only: it reaches its tables through Store and
// Tx (the adapters in sqlite/ and ydb/ run the statements; rules such as
// "a delivered row stays delivered" are written here, once) and receivers
// through Sender (server/ wires in the webhook package), so neither SQL
// nor HTTP links into it.
package notifier
