package logging_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prsaga/prsaga/platform/logging"
	"github.com/prsaga/prsaga/platform/logging/logtest"
)

// A file that reaches MaxSizeMB is renamed to <service>-<time>.jsonl and a
// new one started; every line survives whole in one of the *.jsonl files,
// and at most MaxBackups rotated files are kept.
func TestLogFileRotatesBySize(t *testing.T) {
	dir := t.TempDir()
	log, closer, err := logging.New(logging.Config{Service: "notifier", Dir: dir, MaxSizeMB: 1, MaxBackups: 2})
	if err != nil {
		t.Fatal(err)
	}
	const n = 3 * 1100 // ~3.3 MB of ~1 KB lines: three rotations
	pad := strings.Repeat("x", 1000)
	for i := 0; i < n; i++ {
		log.Info("tick", "i", i, "pad", pad)
	}
	if err := closer.Close(); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(filepath.Join(dir, "notifier.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if info.Size() > 1<<20 {
		t.Errorf("current file is %d bytes, above the 1 MB limit", info.Size())
	}
	if info.Mode().Perm() != 0o644 {
		t.Errorf("current file mode %v, want 0644", info.Mode().Perm())
	}
	// Backups are removed by lumberjack's background mill: wait for it.
	var files []string
	deadline := time.Now().Add(5 * time.Second)
	for {
		files, err = filepath.Glob(filepath.Join(dir, "notifier*.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		if len(files) <= 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(files) != 3 {
		t.Fatalf("files %v, want the current one and 2 backups", files)
	}
	seen := map[float64]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range logtest.Parse(t, b) { // fails on a line cut in two
			seen[m["i"].(float64)] = true
		}
	}
	// The oldest rotated file was removed: what is left is the newest
	// lines, without a hole.
	if !seen[n-1] {
		t.Errorf("the last line is missing")
	}
	for i := n - 1; i >= 0 && seen[float64(i)]; i-- {
		delete(seen, float64(i))
	}
	if len(seen) != 0 {
		t.Errorf("%d lines kept out of sequence (a hole in the newest lines)", len(seen))
	}
}

func TestNewRefusesAServiceNameThatIsAPath(t *testing.T) {
	for _, name := range []string{"", "../x", "a/b", ".."} {
		if _, _, err := logging.New(logging.Config{Service: name, Dir: t.TempDir()}); err == nil {
			t.Errorf("service %q: no error", name)
		}
	}
}

// A handler's lines carry the trace and span of the event's traceparent.
func TestForEventAddsTheTraceOfTheEvent(t *testing.T) {
	var out logtest.Buffer
	log, _, err := logging.New(logging.Config{Service: "merger", Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	env := envelope(t)
	logging.ForEvent(log, env).Info("no trace")
	env.Meta.TraceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	logging.ForEvent(log, env).Info("traced")
	got := logtest.Parse(t, out.Bytes())
	if _, ok := got[0]["trace_id"]; ok {
		t.Errorf("line without traceparent has trace_id %v", got[0]["trace_id"])
	}
	if got[1]["trace_id"] != "4bf92f3577b34da6a3ce929d0e0e4736" || got[1]["span_id"] != "00f067aa0ba902b7" {
		t.Errorf("traced line: trace_id %v span_id %v", got[1]["trace_id"], got[1]["span_id"])
	}
	if got[1]["causation_id"] != "" || got[1]["attempt"] != float64(1) {
		t.Errorf("traced line lacks causation_id/attempt: %v", got[1])
	}
}

func TestParseTraceParent(t *testing.T) {
	for _, tt := range []struct {
		in      string
		ok      bool
		traceID string
	}{
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", true, "4bf92f3577b34da6a3ce929d0e0e4736"},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", true, "4bf92f3577b34da6a3ce929d0e0e4736"},
		{"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra", true, "4bf92f3577b34da6a3ce929d0e0e4736"},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra", false, ""},
		{"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", false, ""},
		{"00-00000000000000000000000000000000-00f067aa0ba902b7-01", false, ""},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", false, ""},
		{"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", false, ""},
		{"", false, ""},
		{"garbage", false, ""},
	} {
		traceID, _, err := logging.ParseTraceParent(tt.in)
		if (err == nil) != tt.ok || traceID != tt.traceID {
			t.Errorf("ParseTraceParent(%q) = %q, %v; want ok=%v %q", tt.in, traceID, err, tt.ok, tt.traceID)
		}
	}
}
