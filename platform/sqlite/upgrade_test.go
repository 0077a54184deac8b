package sqlite_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/natsembed/natstest"
	"github.com/prsaga/prsaga/platform/outbox"
	"github.com/prsaga/prsaga/platform/sqlite/sqlitetest"
)

// A database of the platform's tables alone (the indexer's, and the
// merger's before it had tables of its own) written by each earlier schema
// version opens and migrates today with its inbox and outbox intact, and
// its unsent row is published by today's relay (testdata/schema, made by
// go run ./platform/sqlite/schemafixtures).
func TestUpgradeFromEarlierVersions(t *testing.T) {
	sqlitetest.EachFixture(t, func(t *testing.T, ctx context.Context, fixture string) {
		db := sqlitetest.Upgrade(t, fixture, sqlitetest.FixtureTime.Add(time.Hour))
		rows, err := db.Unsent(ctx, 10)
		if err != nil || len(rows) != 1 {
			t.Fatalf("unsent rows: %v, %v; want the fixture's one", rows, err)
		}
		_, b := natstest.Start(t, bus.Config{})
		relay := &outbox.Relay{Store: db, Pub: b, Log: slog.New(slog.DiscardHandler)}
		if n, err := relay.Flush(ctx); err != nil || n != 1 {
			t.Fatalf("relay of the upgraded database: %d rows, %v; want 1", n, err)
		}
		s, err := b.JS.Stream(ctx, contracts.Stream)
		if err != nil {
			t.Fatal(err)
		}
		m, err := s.GetLastMsgForSubject(ctx, rows[0].Subject)
		if err != nil {
			t.Fatalf("the relayed row on the stream: %v", err)
		}
		if id := m.Header.Get(bus.HeaderMsgID); id != rows[0].ID {
			t.Errorf("relayed message id %q, want %q", id, rows[0].ID)
		}
		if left, err := db.Unsent(ctx, 10); err != nil || len(left) != 0 {
			t.Errorf("unsent after the relay: %v, %v; want none", left, err)
		}
	})
}
