package main

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prsaga/prsaga/platform/logging/logtest"
)

// deploy/ydb/schema.yql is what `prsaga schema --store ydb` prints: a
// migration changed without regenerating it fails here. Regenerate with
// `go run ./cmd/prsaga schema --store ydb --database /local > deploy/ydb/schema.yql`.
func TestSchemaMatchesDeployFile(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"schema", "--store", "ydb", "--database", "/local"}, func(string) string { return "" }, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if want := readFile(t, filepath.Join("..", "..", "deploy", "ydb", "schema.yql")); stdout.String() != want {
		t.Fatalf("deploy/ydb/schema.yql is out of date; regenerate it with prsaga schema --store ydb --database /local")
	}
	for _, want := range []string{
		`PRAGMA TablePathPrefix("/local/prsaga/ledger");`,
		"INDEX idx_saga_state GLOBAL SYNC ON (state, updated_at)",
		`PRAGMA TablePathPrefix("/local/prsaga/merger");`,
		"CREATE TABLE IF NOT EXISTS pr_lock",
		"CREATE TABLE IF NOT EXISTS delivery",
		`TTL = Interval("P8D") ON processed_at,`, "PRIMARY KEY (shard, consumer, event_id)",
	} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("schema lacks %q", want)
		}
	}
}

func TestSchemaFlags(t *testing.T) {
	env := func(k string) string {
		if k == "PRSAGA_STORE" {
			return "grpcs://ydb.example:2135/ru-central1/b1g/etn"
		}
		return ""
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"schema"}, env, &stdout, &stderr); code != exitOK ||
		!strings.Contains(stdout.String(), `PRAGMA TablePathPrefix("/ru-central1/b1g/etn/prsaga/validator");`) {
		t.Errorf("schema with a YDB PRSAGA_STORE: exit %d, want its database in the prefixes:\n%.300s", code, stdout.String())
	}
	for _, args := range [][]string{{"schema", "--store", "sqlite"}, {"schema", "--database", "/x/../y"}, {"schema", "extra"}} {
		stdout.Reset()
		stderr.Reset()
		if code := run(context.Background(), args, func(string) string { return "" }, &stdout, &stderr); code != exitUsage {
			t.Errorf("%v: exit %d, want %d (usage)", args, code, exitUsage)
		}
	}
}

func TestNATSCommand(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr logtest.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"nats", "--nats-listen", "127.0.0.1:0", "--data", t.TempDir()}, func(string) string { return "" }, &stdout, &stderr)
	}()
	re := regexp.MustCompile(`listening on nats://127\.0\.0\.1:\d+`)
	deadline := time.After(20 * time.Second)
	for !re.MatchString(stderr.String()) {
		select {
		case code := <-done:
			t.Fatalf("prsaga nats exited %d: %s", code, stderr.String())
		case <-deadline:
			t.Fatalf("no listening line: %s", stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("exit %d after interrupt: %s", code, stderr.String())
	}
	var out bytes.Buffer
	if code := run(context.Background(), []string{"nats", "--stream-replicas", "3"}, func(string) string { return "" }, &out, &out); code != exitUsage {
		t.Errorf("replicas 3 on one server: exit %d, want usage", code)
	}
}

// With a YDB DSN the stack opens the services' databases on YDB; an
// unreachable YDB fails the start with one line naming the store (no YDB
// server runs on the build machines).
func TestDevWithUnreachableYDB(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"dev", "--quiet", "--data", t.TempDir(), "--http", "127.0.0.1:0", "--nats-listen", "-",
		"--store", "grpc://" + freeAddr(t) + "/local"}, func(string) string { return "" }, &stdout, &stderr)
	if code != exitFailed || !strings.Contains(stderr.String(), "PRSAGA_STORE: connect to YDB at grpc://") {
		t.Fatalf("exit %d, stderr %q; want a failed start naming PRSAGA_STORE and the YDB it could not reach", code, stderr.String())
	}
}
