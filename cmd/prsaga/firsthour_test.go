package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prsaga/prsaga/cmd/prsaga/internal/client"
	"github.com/prsaga/prsaga/platform/gittest"
	"github.com/prsaga/prsaga/platform/logging/logtest"
)

// What a new user types in the first hour, and what they see.

func TestCLIUsageIsShort(t *testing.T) {
	code, out, errs := runCLI(t, "merge", "--bogus")
	if code != exitUsage || out != "" {
		t.Fatalf("merge --bogus = %d, stdout %q", code, out)
	}
	if lines := strings.Count(errs, "\n"); lines > 3 || !strings.Contains(errs, "-bogus") || !strings.Contains(errs, "prsaga merge --help") {
		t.Errorf("merge --bogus printed %d lines, want the one problem and where to get help:\n%s", lines, errs)
	}
	code, _, errs = runCLI(t, "nosuchverb")
	if code != exitUsage || strings.Count(errs, "\n") > 2 || !strings.Contains(errs, "prsaga help") {
		t.Errorf("unknown verb = %d:\n%s", code, errs)
	}
}

func TestCLIHelpOfClientVerbs(t *testing.T) {
	code, _, viaHelp := runCLI(t, "help", "merge")
	code2, _, viaFlag := runCLI(t, "merge", "--help")
	if code != exitOK || code2 != exitOK || viaHelp != viaFlag {
		t.Fatalf("help merge = %d, merge --help = %d; the same text wanted:\n%s\n---\n%s", code, code2, viaHelp, viaFlag)
	}
	for _, want := range []string{"-repo", "-pr ", "-source", "-head", "-api ", "-api-token", "-data"} {
		if !strings.Contains(viaHelp, want) {
			t.Errorf("merge --help lacks %s:\n%s", want, viaHelp)
		}
	}
	for _, server := range []string{"-stream-replicas", "-ack-wait", "-watchdog-interval", "-otlp-endpoint", "-store "} {
		if strings.Contains(viaHelp, server) {
			t.Errorf("merge --help lists the server setting %s", server)
		}
	}
	if n := strings.Count(viaHelp, "\n"); n > 50 {
		t.Errorf("merge --help is %d lines", n)
	}
	// dev still lists every setting.
	if _, _, dev := runCLI(t, "help", "dev"); !strings.Contains(dev, "-stream-replicas") {
		t.Errorf("dev --help lacks the server settings:\n%s", dev)
	}
}

// dlq --help prints help and connects to nothing (nothing listens on the
// NATS URL given: a connection attempt would fail, not print help).
func TestDLQHelpDoesNotConnect(t *testing.T) {
	dead := freeAddr(t)
	began := time.Now()
	code, _, errs := runCLIEnv(t, map[string]string{"PRSAGA_NATS_URL": "nats://" + dead}, "dlq", "--help")
	if code != exitOK || !strings.Contains(errs, "redrive") || !strings.Contains(errs, "-consumer") || strings.Contains(errs, "connect") {
		t.Fatalf("dlq --help = %d:\n%s", code, errs)
	}
	if d := time.Since(began); d > 2*time.Second {
		t.Errorf("dlq --help took %s", d)
	}
	code, _, errs = runCLIEnv(t, map[string]string{"PRSAGA_NATS_URL": "nats://" + dead}, "dlq", "list")
	if code != exitFailed || !strings.Contains(errs, "is `prsaga dev` running?") {
		t.Errorf("dlq list with nothing listening = %d:\n%s", code, errs)
	}
}

func TestMergeValidationNamesFlags(t *testing.T) {
	code, _, errs := runCLI(t, "merge", "--repo", "acme/../etc", "--pr", "1", "--source", "a", "--head", strings.Repeat("0", 40))
	if code != exitUsage || !strings.Contains(errs, `--repo "acme/../etc"`) || strings.Count(errs, "acme/../etc") != 1 {
		t.Errorf("bad repo = %d, want one problem naming --repo:\n%s", code, errs)
	}
	code, _, errs = runCLI(t, "merge", "--repo", "acme/widgets", "--pr", "1")
	if code != exitUsage || !strings.Contains(errs, "--source is empty") || !strings.Contains(errs, "--head") ||
		strings.Contains(errs, "source_branch") || strings.Contains(errs, "head_sha") {
		t.Errorf("missing flags = %d, want them named as flags:\n%s", code, errs)
	}
}

func TestRefusedConnectionSaysWhatToDo(t *testing.T) {
	dead := freeAddr(t)
	code, _, errs := runCLIEnv(t, map[string]string{"PRSAGA_API_URL": "http://" + dead}, "status", "acme/widgets#1")
	if code != exitFailed || !strings.Contains(errs, "is `prsaga dev` running? set --api / PRSAGA_API_URL") {
		t.Fatalf("status with nothing listening = %d:\n%s", code, errs)
	}
	if n := strings.Count(errs, "http://"+dead); n != 1 {
		t.Errorf("the URL is printed %d times, want once:\n%s", n, errs)
	}
}

// `prsaga dev` on ports of its own choosing: the client verbs and dlq
// find it through its data directory; a second dev on its port is told at
// once; a PR whose work was already in main says so; status suggests the
// retry that will work; trace takes a PR id.
func TestDevRecordsWhereItListens(t *testing.T) {
	dir := t.TempDir()
	httpAddr, natsAddr := freeAddr(t), freeAddr(t)
	env := map[string]string{"PRSAGA_DATA_DIR": dir}
	getenv := func(k string) string { return env[k] }
	ctx, cancel := context.WithCancel(context.Background())
	var devOut, devErr logtest.Buffer
	done := make(chan int, 2)
	go func() {
		code := run(ctx, []string{"dev", "--quiet", "--http", httpAddr, "--nats-listen", natsAddr, "--backoff", "50ms,200ms"}, getenv, &devOut, &devErr)
		done <- code
		done <- code // one for the test, one for the cleanup
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("dev did not stop")
		}
	})
	info := filepath.Join(dir, devInfoFile)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(info); err == nil {
			break
		}
		select {
		case code := <-done:
			t.Fatalf("dev exited %d:\n%s", code, devErr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("dev recorded nothing in %s:\n%s", info, devErr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	rec, ok := readDevInfo(dir)
	if !ok || rec.APIURL != "http://"+httpAddr || !strings.HasSuffix(rec.NATSURL, natsAddr) {
		t.Fatalf("dev.json = %+v, want http://%s and nats on %s", rec, httpAddr, natsAddr)
	}
	if code, out, errs := runCLIEnv(t, env, "list"); code != exitOK || !strings.Contains(out, "(none)") {
		t.Fatalf("list (found through %s) = %d\n%s%s", info, code, out, errs)
	}
	if code, out, errs := runCLIEnv(t, env, "dlq", "list"); code != exitOK {
		t.Fatalf("dlq list (found through %s) = %d\n%s%s", info, code, out, errs)
	}

	// A second dev on the same port says so at once.
	began := time.Now()
	code, _, errs := runCLIEnv(t, map[string]string{"PRSAGA_DATA_DIR": t.TempDir()}, "dev", "--quiet", "--http", httpAddr, "--nats-listen", freeAddr(t))
	if code != exitFailed || !strings.Contains(errs, httpAddr+" is already in use") || !strings.Contains(errs, "PRSAGA_HTTP_ADDR") {
		t.Errorf("second dev = %d:\n%s", code, errs)
	}
	if d := time.Since(began); d > 3*time.Second {
		t.Errorf("the second dev took %s to say its port is taken", d)
	}

	c := client.New(rec.APIURL, "")
	repos := filepath.Join(dir, "repos")
	bare, head := makeRepo(t, repos, "acme/widgets", "feature/hello")
	setCI(t, c, "acme/widgets", head, "success")
	merge := func(pr, strategy string) (int, string, string) {
		return runCLIEnv(t, env, "merge", "--repo", "acme/widgets", "--pr", pr, "--source", "feature/hello",
			"--head", head, "--strategy", strategy, "--wait", "30s")
	}
	if code, out, errs := merge("1", "merge"); code != exitOK || strings.Contains(out, "already there") {
		t.Fatalf("merge #1 = %d\n%s%s", code, out, errs)
	}
	// #2 carries the same commits: the merger finds them in main.
	code, out, errs := merge("2", "merge")
	if code != exitOK || !strings.Contains(out, "the code IS merged into main") || !strings.Contains(out, "already there before this run") {
		t.Fatalf("merge #2 (already in main) = %d\n%s%s", code, out, errs)
	}
	_, js, _ := runCLIEnv(t, env, "status", "acme/widgets#2", "--json")
	var s client.Saga
	if err := json.Unmarshal([]byte(js), &s); err != nil || !s.AlreadyMerged {
		t.Errorf("status --json of #2: already_merged not set (%v):\n%s", err, js)
	}
	_, js, _ = runCLIEnv(t, env, "status", "acme/widgets#1", "--json")
	if strings.Contains(js, "already_merged") {
		t.Errorf("status --json of #1 says already_merged:\n%s", js)
	}

	// main moves on: a fast-forward of the old head is refused, not
	// retryable; status suggests what retry accepts.
	work := t.TempDir()
	gittest.Run(t, work, "clone", "-q", bare, ".")
	gittest.Run(t, work, "checkout", "-q", "-b", "feature/ff")
	gittest.Run(t, work, "commit", "-q", "--allow-empty", "-m", "on the branch")
	ffHead := gittest.Run(t, work, "rev-parse", "HEAD")
	gittest.Run(t, work, "checkout", "-q", "main")
	gittest.Run(t, work, "commit", "-q", "--allow-empty", "-m", "moves main")
	gittest.Run(t, work, "push", "-q", "origin", "main", "feature/ff")
	setCI(t, c, "acme/widgets", ffHead, "success")
	code, out, _ = runCLIEnv(t, env, "merge", "--repo", "acme/widgets", "--pr", "3", "--source", "feature/ff",
		"--head", ffHead, "--strategy", "fast-forward", "--wait", "30s")
	if code != exitFailed || !strings.Contains(out, "MERGE_FAILED") {
		t.Fatalf("fast-forward of an old head = %d\n%s", code, out)
	}
	_, out, _ = runCLIEnv(t, env, "status", "acme/widgets#3")
	if !strings.Contains(out, "prsaga retry 'acme/widgets#3' --force") {
		t.Errorf("status of a not-retryable failure does not suggest --force:\n%s", out)
	}
	code, _, errs = runCLIEnv(t, env, "retry", "acme/widgets#3")
	if code != exitFailed || !strings.Contains(errs, "--force") || strings.Contains(errs, "force=true") {
		t.Errorf("retry without --force = %d:\n%s", code, errs)
	}

	// trace takes a PR id: its latest run.
	code, out, errs = runCLIEnv(t, env, "trace", "acme/widgets#1")
	if code != exitOK || !strings.Contains(errs, "the latest run of acme/widgets#1 is ") || !strings.Contains(out, "MERGED") {
		t.Errorf("trace by PR id = %d\n%s%s", code, out, errs)
	}

	cancel()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("dev did not stop")
	}
	if _, err := os.Stat(info); !os.IsNotExist(err) {
		t.Errorf("%s is still there after dev stopped (%v)", info, err)
	}
}
