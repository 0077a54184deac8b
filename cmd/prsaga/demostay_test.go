package main

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prsaga/prsaga/platform/logging/logtest"
)

// `make demo` printed a dashboard URL that was dead once it exited: the
// demo now says so and `--stay` keeps the dashboard up until interrupted.
func TestDemoStay(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every demo scenario")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb logtest.Buffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"demo", "--stay"}, func(string) string { return "" }, &out, &errb) }()
	url := regexp.MustCompile(`dashboard: (http://\S+/) — up until Ctrl-C`)
	deadline := time.Now().Add(3 * time.Minute)
	var m []string
	for m == nil {
		select {
		case code := <-done:
			t.Fatalf("demo --stay exited %d before staying:\n%s\n%s", code, out.String(), errb.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("demo --stay never said it stays up:\n%s", out.String())
		}
		time.Sleep(100 * time.Millisecond)
		m = url.FindStringSubmatch(out.String())
	}
	if !strings.Contains(out.String(), "stays up after the scenarios until Ctrl-C") {
		t.Errorf("the first dashboard line does not say it stays:\n%s", out.String())
	}
	resp, err := http.Get(m[1])
	if err != nil {
		t.Fatalf("the dashboard the demo left up: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("GET %s = %d", m[1], resp.StatusCode)
	}
	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Errorf("demo --stay exited %d after the interrupt", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("demo --stay did not stop when interrupted")
	}
}
