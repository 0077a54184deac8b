package ydb

// The platform's YQL: every statement the outbox, the inbox and the
// migrations run, each a constant (ydbcheck's test lists them all and types
// them against the migrations). Every value is a typed parameter.
//
// The outbox and the inbox are keyed by (shard, …), shard = Shard(id): event
// ids are UUIDv7, time-ordered, so a key that began with the id would send
// every insert to the table's last partition. See docs/ydb.md.
const (
	qMigrationApplied = `SELECT applied_at FROM schema_migrations WHERE component = $component AND name = $name`
	qRecordMigration  = `UPSERT INTO schema_migrations (component, name, applied_at)
VALUES ($component, $name, $at)`

	// One point of the key (shard, consumer, event_id).
	qInboxSeen = `SELECT processed_at FROM inbox WHERE shard = $shard AND consumer = $consumer AND event_id = $event_id`
	// The ids of a batch already handled: points of the key, as qOutboxHeld.
	qInboxSeenAny = `SELECT event_id FROM inbox WHERE shard IN $shards AND consumer = $consumer AND event_id IN $ids`
	qInboxInsert  = `UPSERT INTO inbox SELECT shard, consumer, event_id, processed_at FROM AS_TABLE($inbox)`

	// The outbox rows of a transaction already held: points of the key
	// (shard, id) — the few shards of the few ids one transaction emits.
	qOutboxHeld   = `SELECT id FROM outbox WHERE shard IN $shards AND id IN $ids`
	qOutboxInsert = `UPSERT INTO outbox
SELECT shard, id, subject, headers, body, created_at, created_at AS pending_since FROM AS_TABLE($outbox)`
	// A transaction's inbox and outbox rows in one round trip.
	qInboxOutboxInsert = qInboxInsert + ";\n" + qOutboxInsert

	// Unsent rows: one range of idx_outbox_unsent (shard, pending_since)
	// per shard, from the epoch up (sent rows have a NULL pending_since,
	// below the range), oldest first across shards.
	qUnsent = `SELECT id, subject, headers, body, created_at
FROM outbox VIEW idx_outbox_unsent
WHERE shard IN $shards AND pending_since >= $epoch
ORDER BY pending_since, id
LIMIT $limit`
	// Marks rows sent by key: UPDATE ON touches only rows that exist, so an
	// unknown id is ignored; marking a row twice only moves its sent_at.
	qMarkSent    = `UPDATE outbox ON SELECT shard, id, sent_at, pending_since FROM AS_TABLE($sent)`
	qOutboxStats = `SELECT COUNT(*) AS n, MIN(pending_since) AS oldest
FROM outbox VIEW idx_outbox_unsent
WHERE shard IN $shards AND pending_since >= $epoch`

	// ExpireInbox: a bounded page of expired keys found by a snapshot read
	// (no locks), then deleted by key in a transaction of its own.
	qExpiredInbox = `SELECT shard, consumer, event_id FROM inbox WHERE processed_at < $cut LIMIT $limit`
	qDeleteInbox  = `DELETE FROM inbox ON SELECT shard, consumer, event_id FROM AS_TABLE($keys)`
)
