package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prsaga/prsaga/cmd/prsaga/internal/backup"
	"github.com/prsaga/prsaga/cmd/prsaga/internal/client"
	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/fault"
)

// A backup is taken; then a PR is squashed, a PR that had failed before
// the backup is retried and merged, and a PR requested after it fails and
// is retried and merged. The services are stopped and `prsaga restore` is
// killed at every boundary between its steps, each run going on from what
// the killed one left, until one completes; one more run, right after,
// completes too. Started again, the deployment catches up: every saga ends
// as before, each merged PR has exactly one commit on main (the one
// squashed after the backup is not squashed a second time), every kept
// directory is still there, `prsaga ledger verify` agrees, and the
// history keeps the times of the transitions, not the catch-up's.
func TestRestoreKilledAtEveryStepThenRunAgain(t *testing.T) {
	bin := buildBinary(t)
	cfg := testConfig(t)
	reqs := prepareRepos(t, cfg.ReposDir, 4, 1)
	early, failedEarly, squashed, failedLate := reqs[0], reqs[1], reqs[2], reqs[3]
	squashed.Strategy = contracts.StrategySquash

	st := startStack(t, cfg)
	c := client.New(st.URL, "")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	setCI(t, c, early.Repo, early.HeadSHA, "success")
	setCI(t, c, failedEarly.Repo, failedEarly.HeadSHA, "failure")
	publishRequests(ctx, t, st.Bus, "https://forge.example/restore", []contracts.Request{early, failedEarly})
	waitState(t, c, early.PRID, contracts.StateMerged, 1)
	waitState(t, c, failedEarly.PRID, contracts.StateMergeFailed, 1)
	waitSettled(t, ctx, st.Bus)

	dir := filepath.Join(t.TempDir(), "backup")
	if code, out, errOut := runCLI(t, "backup", "--to", dir, "--data", cfg.DataDir, "--nats-url", st.NATS.Addr(), "--api", st.URL); code != exitOK {
		t.Fatalf("backup: exit %d\n%s%s", code, out, errOut)
	}

	setCI(t, c, squashed.Repo, squashed.HeadSHA, "success")
	setCI(t, c, failedLate.Repo, failedLate.HeadSHA, "failure")
	publishRequests(ctx, t, st.Bus, "https://forge.example/restore", []contracts.Request{squashed, failedLate})
	waitState(t, c, squashed.PRID, contracts.StateMerged, 1)
	waitState(t, c, failedLate.PRID, contracts.StateMergeFailed, 1)
	for _, r := range []contracts.Request{failedEarly, failedLate} {
		setCI(t, c, r.Repo, r.HeadSHA, "success")
		if _, err := c.Retry(ctx, r.PRID, client.RetryOptions{Force: true}); err != nil {
			t.Fatalf("retry %s: %v", r.PRID, err)
		}
		waitState(t, c, r.PRID, contracts.StateMerged, 2)
	}
	waitSettled(t, ctx, st.Bus)
	want := outcomes(t, c)
	history := map[string][]client.Transition{}
	for _, r := range reqs {
		s, err := c.Saga(ctx, r.PRID)
		if err != nil {
			t.Fatal(err)
		}
		history[r.PRID] = s.Transitions
	}
	st.Stop()

	restoreStart := time.Now()
	restore := func(faults string) (int, string) {
		t.Helper()
		cmd := exec.CommandContext(ctx, bin, "restore", "--from", dir, "--data", cfg.DataDir)
		cmd.Env = cleanEnv(fault.Env + "=" + faults)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("restore (%s): %v\n%s", faults, err, out)
		}
		return cmd.ProcessState.ExitCode(), string(out)
	}
	// The services' databases are restored in this order; each passes the
	// three database points once.
	const merger, ledger = 2, 5
	kills := []string{
		fmt.Sprintf("%s=exit@%d", backup.FaultDBMoved, merger),
		fmt.Sprintf("%s=exit@%d", backup.FaultDBCopied, merger),
		fmt.Sprintf("%s=exit@%d", backup.FaultDBCarried, merger),
		fmt.Sprintf("%s=exit@%d", backup.FaultDBMoved, ledger),
		backup.FaultIndexMoved + "=exit",
		backup.FaultIndexCopied + "=exit",
		backup.FaultConsumerDone + "=exit",
	}
	for _, k := range kills {
		if code, out := restore(k); code != fault.ExitCode || !strings.Contains(out, "fault point") {
			t.Fatalf("restore with %s: exit %d, want %d (killed there)\n%s", k, code, fault.ExitCode, out)
		}
	}
	for i := range 2 {
		if code, out := restore(""); code != exitOK {
			t.Fatalf("restore run %d after the kills: exit %d\n%s", i+1, code, out)
		}
	}
	kept, err := filepath.Glob(filepath.Join(cfg.DataDir, "db", "pre-restore-*"))
	if err != nil || len(kept) != len(kills)+2 {
		t.Fatalf("kept directories %v (%v), want one per run (%d)", kept, err, len(kills)+2)
	}
	if _, err := os.Stat(filepath.Join(kept[0], "merger.sqlite")); err != nil {
		t.Fatalf("the first run's kept merger database is gone: %v", err)
	}

	st2 := startStack(t, cfg)
	c2 := client.New(st2.URL, "")
	waitCond(t, 2*time.Minute, "every saga as before the restore", func() bool {
		got := outcomes(t, c2)
		for pr, w := range want {
			if got[pr] != w {
				return false
			}
		}
		return len(got) == len(want)
	})
	waitSettled(t, ctx, st2.Bus)
	if got := outcomes(t, c2); len(got) != len(want) {
		t.Fatalf("after catching up: %v, want %v", got, want)
	}
	counts := mainTrailers(t, cfg.ReposDir, 1)
	for _, r := range reqs {
		if counts[r.PRID] != 1 {
			t.Errorf("%s: %d commits on main, want 1", r.PRID, counts[r.PRID])
		}
	}
	for _, r := range reqs {
		s, err := c2.Saga(ctx, r.PRID)
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range s.Transitions {
			if !tr.At.Before(restoreStart) {
				t.Errorf("%s: transition %d %s>%s at %s, the catch-up's time (the restore began at %s)", r.PRID, tr.Seq, tr.From, tr.To, tr.At, restoreStart)
			}
		}
		if r.PRID == squashed.PRID && fmt.Sprint(stamps(s.Transitions)) != fmt.Sprint(stamps(history[r.PRID])) {
			t.Errorf("%s: history after the restore %v, want it as before %v", r.PRID, stamps(s.Transitions), stamps(history[r.PRID]))
		}
	}
	st2.Stop()
	if code, out, errOut := runCLI(t, "ledger", "verify", "--data", cfg.DataDir); code != exitOK {
		t.Fatalf("ledger verify after the restore: exit %d\n%s%s", code, out, errOut)
	}
}

// stamps are the transitions' targets, causes and times.
func stamps(ts []client.Transition) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = fmt.Sprintf("%s %s %s", t.To, t.EventID, t.At.UTC().Format(time.RFC3339Nano))
	}
	return out
}
