// Package store is the store-neutral port of a service's database (design
// §5): a write transaction that carries the platform's inbox and outbox
// beside the service's own tables, and the reads the runner and the outbox
// relay need. Two adapters implement it: platform/sqlite (embedded, the
// default) and platform/ydb (production). A service's own tables have one
// adapter per store in the service (services/<name>/sqlite, .../ydb); they
// reach their store's transaction through a type assertion on Tx.
//
// storetest holds the one conformance suite every adapter passes.
package store
