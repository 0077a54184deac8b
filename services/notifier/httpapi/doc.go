// Package httpapi serves the notifier's watchers API (design §6):
// operators put a repository's webhook receivers, readers list them by id
// and host only. A watcher's URL and secret never come back.
package httpapi
