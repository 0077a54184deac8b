package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A database made before the inbox lost its rowid keeps what its inbox
// recorded: a redelivery is still dropped after the upgrade.
func TestInboxKeptAcrossWithoutRowidMigration(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	path := filepath.Join(t.TempDir(), "db.sqlite")
	old, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	body, err := platformMigrations.ReadFile("migrations/0001_outbox_inbox.sql")
	if err != nil {
		t.Fatal(err)
	}
	stmts := []string{`CREATE TABLE schema_migrations (component TEXT NOT NULL, name TEXT NOT NULL, applied_at INTEGER NOT NULL, PRIMARY KEY (component, name))`,
		`INSERT INTO schema_migrations VALUES ('platform', '0001_outbox_inbox.sql', 0)`,
		`INSERT INTO inbox (consumer, event_id, processed_at) VALUES ('c', 'seen-before', 1)`}
	stmts = append(strings.Split(string(body), ";\n"), stmts...)
	for _, s := range stmts {
		if strings.TrimSpace(s) == "" {
			continue
		}
		if _, err := old.ExecContext(ctx, s); err != nil {
			t.Fatalf("old schema: %v", err)
		}
	}
	old.Close()

	db, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer db.Close()
	seen, err := db.Processed(ctx, "c", "seen-before")
	if err != nil || !seen {
		t.Fatalf("processed after the upgrade: %v, %v; want true", seen, err)
	}
	var ddl string
	if err := db.Reader().QueryRowContext(ctx, `SELECT sql FROM sqlite_schema WHERE name = 'inbox'`).Scan(&ddl); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ddl, "WITHOUT ROWID") {
		t.Errorf("inbox after the upgrade: %s; want WITHOUT ROWID", ddl)
	}
	var idx int
	if err := db.Reader().QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND name = 'idx_inbox_processed'`).Scan(&idx); err != nil || idx != 1 {
		t.Errorf("expiry index after the upgrade: %d (%v), want 1", idx, err)
	}
}
