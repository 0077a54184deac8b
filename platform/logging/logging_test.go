package logging_test

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/logging"
	"github.com/prsaga/prsaga/platform/logging/logtest"
	"github.com/prsaga/prsaga/platform/store/storetest"
)

func envelope(t *testing.T) contracts.Envelope {
	t.Helper()
	env, err := contracts.Open(storetest.Requested(t, "req-1"))
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func TestLoggerWritesJSONLinesToStdoutAndFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "logs") // created by New
	var stdout logtest.Buffer
	log, closer, err := logging.New(logging.Config{Service: "merger", Level: slog.LevelInfo, Dir: dir, Stdout: &stdout})
	if err != nil {
		t.Fatalf("new logger: %v", err)
	}
	log.Info("started", "workers", 4)
	log.Debug("below the level")
	logging.ForEvent(log, envelope(t)).Warn("handling failed")
	if err := closer.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}

	file, err := os.ReadFile(filepath.Join(dir, "merger.jsonl"))
	if err != nil {
		t.Fatalf("log file: %v", err)
	}
	if !bytes.Equal(file, stdout.Bytes()) {
		t.Errorf("file and stdout differ:\nfile:   %s\nstdout: %s", file, stdout.Bytes())
	}
	got := logtest.Parse(t, file)
	if len(got) != 2 {
		t.Fatalf("lines: got %d, want 2 (debug filtered out):\n%s", len(got), file)
	}
	for i, m := range got {
		if m["service"] != "merger" {
			t.Errorf("line %d service: got %v, want merger", i+1, m["service"])
		}
	}
	if got[0]["msg"] != "started" || got[0]["workers"] != float64(4) || got[0]["level"] != "INFO" {
		t.Errorf("line 1: got %v", got[0])
	}
	want := map[string]any{
		"correlation_id": "req-1",
		"pr_id":          "acme/widgets#1",
		"event_id":       "req-1",
		"event_type":     contracts.TypeMergeRequested,
		"level":          "WARN",
	}
	for k, v := range want {
		if got[1][k] != v {
			t.Errorf("ForEvent line %s: got %v, want %v", k, got[1][k], v)
		}
	}
}

func TestLoggerAppendsAndKeepsLinesWhole(t *testing.T) {
	dir := t.TempDir()
	for run := 0; run < 2; run++ { // a restart appends
		log, closer, err := logging.New(logging.Config{Service: "ledger", Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for w := 0; w < 8; w++ {
			wg.Go(func() {
				for i := 0; i < 25; i++ {
					log.Info("tick", "worker", w, "i", i, "pad", strings.Repeat("x", 200))
				}
			})
		}
		wg.Wait()
		if err := closer.Close(); err != nil {
			t.Fatal(err)
		}
	}
	file, err := os.ReadFile(filepath.Join(dir, "ledger.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if got := len(logtest.Parse(t, file)); got != 2*8*25 {
		t.Errorf("lines: got %d, want %d", got, 2*8*25)
	}
}

func TestLoggerWithoutOutputs(t *testing.T) {
	log, closer, err := logging.New(logging.Config{Service: "indexer"})
	if err != nil {
		t.Fatal(err)
	}
	log.Info("nowhere")
	if err := closer.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
}

func TestParseLevel(t *testing.T) {
	for _, tt := range []struct {
		in      string
		want    slog.Level
		wantErr bool
	}{
		{"", slog.LevelInfo, false},
		{"debug", slog.LevelDebug, false},
		{"INFO", slog.LevelInfo, false},
		{"warn", slog.LevelWarn, false},
		{"error", slog.LevelError, false},
		{"verbose", 0, true},
	} {
		got, err := logging.ParseLevel(tt.in)
		if (err != nil) != tt.wantErr || (!tt.wantErr && got != tt.want) {
			t.Errorf("ParseLevel(%q): got %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
		if err != nil && !strings.Contains(err.Error(), tt.in) {
			t.Errorf("ParseLevel(%q) error %q does not name the input", tt.in, err)
		}
	}
}
