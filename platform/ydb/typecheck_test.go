package ydb

import (
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/prsaga/prsaga/platform/store"
	"github.com/prsaga/prsaga/platform/ydb/ydbcheck"
)

// Every statement of the platform's YDB adapter, with its parameters as
// the adapter builds them and the function that scans its rows, typed
// against the migrations (see ydbcheck). A statement declared in the
// package and missing here fails the test.
func TestStatementsTypeCheck(t *testing.T) {
	now := ydbcheck.Now
	row := store.OutboxRow{ID: "e-1", Subject: "s", Header: nats.Header{"A": {"b"}}, Body: []byte("{}"), CreatedAt: now}
	marked := []inboxKey{{"c", "e-1"}}
	both, bothParams, err := flushStatement(marked, []store.OutboxRow{row}, now)
	if err != nil || both != qInboxOutboxInsert {
		t.Fatalf("flush of inbox and outbox rows: %q, %v", both, err)
	}
	in, inParams, _ := flushStatement(marked, nil, now)
	out, outParams, _ := flushStatement(nil, []store.OutboxRow{row}, now)
	if in != qInboxInsert || out != qOutboxInsert {
		t.Fatalf("flush statements %q, %q", in, out)
	}
	ydbcheck.LoadPackage(SchemaStatements()).Run(t, []ydbcheck.Case{
		{Name: "qMigrationApplied", YQL: qMigrationApplied, Params: migrationParams("c", "0001_x.yql"), Scan: scanMigrationApplied},
		{Name: "qRecordMigration", YQL: qRecordMigration, Params: recordMigrationParams("c", "0001_x.yql", now)},
		{Name: "qInboxSeen", YQL: qInboxSeen, Params: inboxKeyParams("c", "e-1"), Scan: scanInboxSeen},
		{Name: "qInboxSeenAny", YQL: qInboxSeenAny, Params: inboxSeenAnyParams("c", []string{"e-1", "e-2"}),
			Scan: ydbcheck.Scan(scanID)},
		{Name: "qInboxInsert", YQL: qInboxInsert, Params: inParams},
		{Name: "qOutboxInsert", YQL: qOutboxInsert, Params: outParams},
		{Name: "qInboxOutboxInsert", YQL: qInboxOutboxInsert, Params: bothParams},
		{Name: "qOutboxHeld", YQL: qOutboxHeld, Params: outboxHeldParams([]string{"e-1", "e-2"}),
			Scan: ydbcheck.Scan(scanID)},
		{Name: "qUnsent", YQL: qUnsent, Params: unsentParams(10),
			Scan: ydbcheck.Scan2(scanUnsent)},
		{Name: "qMarkSent", YQL: qMarkSent, Params: markSentParams([]string{"e-1"}, now)},
		{Name: "qOutboxStats", YQL: qOutboxStats, Params: outboxStatsParams(),
			Scan: ydbcheck.Scan2(scanOutboxStats)},
		{Name: "qExpiredInbox", YQL: qExpiredInbox, Params: expiredParams(now),
			Scan: ydbcheck.Scan(scanExpired), Scans: "a sweep behind the TTL, outside any transaction, up to $limit expired keys"},
		{Name: "qDeleteInbox", YQL: qDeleteInbox, Params: deleteInboxParams([]inboxRowKey{{1, "c", "e-1"}})},
	})
}
