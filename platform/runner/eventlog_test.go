package runner

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/logging"
	"github.com/prsaga/prsaga/platform/store/storetest"
)

// A message's lazy logger writes what logging.ForEvent's writes, line for
// line, whatever is logged through it, and nothing below the level.
func TestEventLogWritesWhatForEventWrites(t *testing.T) {
	r := storetest.Request()
	e, err := contracts.NewRequested("req-log-1", "https://forge.example/acme", time.Now(), r, "ref-1")
	if err != nil {
		t.Fatal(err)
	}
	e.SetExtension(contracts.ExtTraceParent, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	env, err := contracts.Open(e)
	if err != nil {
		t.Fatal(err)
	}
	write := func(l *slog.Logger) {
		ctx := context.Background()
		l.DebugContext(ctx, "not enabled")
		l.InfoContext(ctx, "handled", "k", 1)
		l.InfoContext(ctx, "many", "a", 1, "b", "two", "c", 3.5, "d", true, "e", time.Second, "f", nil, slog.Group("grp", "z", 1), "", "x")
		l.With("step", "VALIDATING").WarnContext(ctx, "with attrs")
		l.WithGroup("g").Info("in a group", "x", "y")
	}
	out := func(lazy bool) string {
		var b bytes.Buffer
		base := slog.New(slog.NewJSONHandler(&b, &slog.HandlerOptions{Level: slog.LevelInfo,
			ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
				if a.Key == slog.TimeKey && len(groups) == 0 {
					return slog.Attr{}
				}
				return a
			}})).With("consumer", "validator")
		if lazy {
			write(eventLog(base, env))
		} else {
			write(logging.ForEvent(base, env))
		}
		return b.String()
	}
	want, got := out(false), out(true)
	if got != want {
		t.Errorf("lazy logger wrote\n%s\nForEvent's wrote\n%s", got, want)
	}
	if n := strings.Count(got, "\n"); n != 4 || !strings.Contains(got, `"correlation_id":"req-log-1"`) || !strings.Contains(got, `"trace_id":"0af7651916cd43dd8448eb211c80319c"`) {
		t.Errorf("want 4 lines with the event's ids, got %d:\n%s", n, got)
	}
}

// Handlers may log from several goroutines at once.
func TestEventLogConcurrentUse(t *testing.T) {
	e, err := contracts.NewRequested("req-log-2", "https://forge.example/acme", time.Now(), storetest.Request(), "")
	if err != nil {
		t.Fatal(err)
	}
	env, err := contracts.Open(e)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var b bytes.Buffer
	l := eventLog(slog.New(slog.NewTextHandler(&lockedWriter{mu: &mu, w: &b}, nil)), env)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.Info("line")
		}()
	}
	wg.Wait()
	if n := strings.Count(b.String(), "event_id=req-log-2"); n != 8 {
		t.Errorf("lines with the event id: %d, want 8:\n%s", n, b.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
