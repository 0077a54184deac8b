package main

import (
	"encoding/json"
	"flag"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prsaga/prsaga/cmd/prsaga/internal/client"
	"github.com/prsaga/prsaga/cmd/prsaga/internal/stack"
	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/config"
	"github.com/prsaga/prsaga/services/ledger"
)

// prsaga watchdog --once, run from two schedulers at once beside a ledger
// whose own watchdog does not tick: before the deadline it examines
// nothing; after it, exactly one of them fails the stuck saga, prints the
// row with its diagnosis, and publishes timed_out; both exit 0. Without
// its NATS server it exits 1.
func TestWatchdogOnce(t *testing.T) {
	cfg := testConfig(t)
	tuning := []string{"--ack-wait", "1s", "--max-deliver", "2", "--backoff", "50ms,200ms",
		"--step-timeout", "3s", "--step-timeout-notifying", "1h", "--watchdog-interval", "1h"}
	cfg = reconfigure(t, cfg, tuning...)
	_, head := makeRepo(t, cfg.ReposDir, "acme/widgets", "feature/hello")
	// No merger runs: the saga stays in MERGING.
	st := startWith(t, stack.Options{Config: cfg, Services: []string{"validator", "ledger"}})
	c := client.New(st.URL, "")
	setCI(t, c, "acme/widgets", head, "success")
	const pr = "acme/widgets#42"
	mustMerge(t, c, request("acme/widgets", 42, "feature/hello", head))
	s := waitState(t, c, pr, contracts.StateMerging, 1)

	args := append([]string{"watchdog", "--once", "--data", cfg.DataDir, "--nats-url", st.NATS.Addr()}, tuning...)
	once := func() (int, ledger.TickResult, string) {
		code, out, errOut := runCLI(t, args...)
		var res ledger.TickResult
		if code != exitUsage && json.Unmarshal([]byte(out), &res) != nil {
			t.Fatalf("watchdog --once printed no JSON summary (exit %d):\n%s%s", code, out, errOut)
		}
		return code, res, errOut
	}
	if code, res, errOut := once(); code != exitOK || res.Stuck != 0 || res.Moved != 0 {
		t.Fatalf("before the deadline: exit %d %+v %s, want 0 examined", code, res, errOut)
	}

	deadline := s.UpdatedAt.Add(3 * time.Second)
	waitCond(t, 30*time.Second, "the step deadline", func() bool { return time.Now().After(deadline.Add(200 * time.Millisecond)) })
	var wg sync.WaitGroup
	results := make([]ledger.TickResult, 2)
	codes := make([]int, 2)
	for i := range results {
		wg.Go(func() { codes[i], results[i], _ = once() })
	}
	wg.Wait()
	moved := 0
	for i, res := range results {
		if codes[i] != exitOK {
			t.Fatalf("scheduler %d: exit %d %+v", i, codes[i], res)
		}
		moved += res.Moved
		for _, row := range res.Rows {
			if row.PRID != pr || row.Step != contracts.StateMerging || row.Diagnosis == "" || !row.Deadline.Equal(deadline.UTC()) {
				t.Errorf("scheduler %d examined %+v, want %s in MERGING with a diagnosis, deadline %v", i, row, pr, deadline)
			}
		}
	}
	if moved != 1 {
		t.Fatalf("the two ticks timed out %d sagas together, want exactly 1: %+v", moved, results)
	}
	if got := waitState(t, c, pr, contracts.StateMergeFailed, 1); got.FailedStep != contracts.StateMerging || !got.TimedOut {
		t.Fatalf("after the tick: %+v, want MERGE_FAILED at MERGING, timed out", got)
	}
	if evs := streamEvents(t, st.Bus, contracts.SubjectTimedOut, pr); len(evs) != 1 {
		t.Fatalf("%d timed_out events on the stream, want 1", len(evs))
	}

	dead := append([]string{"watchdog", "--once", "--data", cfg.DataDir, "--nats-url", "nats://" + freeAddr(t)}, tuning...)
	if code, _, errOut := runCLI(t, dead...); code != exitFailed || !strings.Contains(errOut, "prsaga watchdog:") {
		t.Fatalf("without its NATS server: exit %d %s, want 1 with a reason", code, errOut)
	}
	if code, _, _ := runCLI(t, "watchdog"); code != exitUsage {
		t.Fatalf("watchdog without --once: exit %d, want usage", code)
	}
}

// reconfigure applies flags to cfg's data directory's default configuration.
func reconfigure(t *testing.T, cfg config.Config, args ...string) config.Config {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	load := config.Bind(fs, func(string) string { return "" })
	if err := fs.Parse(append([]string{"--data", cfg.DataDir, "--log-dir", cfg.LogDir}, args...)); err != nil {
		t.Fatal(err)
	}
	out, err := load()
	if err != nil {
		t.Fatal(err)
	}
	return out
}
