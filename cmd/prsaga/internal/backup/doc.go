// Package backup takes a consistent online copy of a prsaga deployment on
// the SQLite store — every service's database, the search index and the
// stream position each durable consumer had applied — and puts one back
// into a stopped deployment, resetting the consumers to that position
// (design §7, docs/operating.md "Backup and restore").
//
// Why the copy is consistent without stopping anything: a consumer acks a
// message only after the transaction that applied it committed (or, for an
// event it skips — design §4 — having nothing to apply), so the ack floor
// of each durable consumer read before the databases are copied is at
// most what the copies applied. Restore resets each consumer to its
// floor + 1: the messages between the floor and what the copy applied are
// delivered again and dropped by the inbox (it is in the same copy), the
// ones after are handled as new. The index is copied after the indexer's
// database, so every event that database's inbox holds is in it (an index
// write precedes the inbox commit).
package backup
