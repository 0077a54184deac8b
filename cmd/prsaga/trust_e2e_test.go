//go:build linux

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

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/prsaga/prsaga/cmd/prsaga/internal/client"
	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/gittest"
	"github.com/prsaga/prsaga/platform/step"
)

// TestTrustFromTheTransport runs a real nats-server with the shipped
// deploy/nats/accounts.conf and every service as its own `prsaga serve`
// process under its own NATS user, and attacks it as the forge's user and as
// a step service's user would:
//   - a forged replay on the forge's subject (ce-source /prsaga/ledger,
//     ce-replayof, ce-attempt 5) is dead-lettered with the reason and
//     changes no saga: the PR's plain request then merges at attempt 1;
//   - the forge may not publish a replay subject, a step's event or a
//     step_failed: the server refuses them;
//   - a service's user may not publish another service's step_failed, and
//     its own step_failed naming another step is dead-lettered;
//   - a genuine retry (the ledger's replay) still works.
func TestTrustFromTheTransport(t *testing.T) {
	pt := newProcTest(t, "runs nats-server and five prsaga processes")
	ctx := pt.ctx
	users := []string{"validator", "merger", "notifier", "indexer", "ledger", "forge", "admin", "sys"}
	var env []string
	for _, u := range users {
		env = append(env, "NATS_PASSWORD_"+strings.ToUpper(u)+"=pw-"+u)
	}
	natsAddr := startAccountsNATS(t, pt, env)
	urlOf := func(user string) string { return "nats://" + user + ":pw-" + user + "@" + natsAddr }
	connect := func(user string) *bus.Bus {
		t.Helper()
		b, err := bus.Connect(ctx, bus.Config{URL: urlOf(user), Name: "test-" + user})
		if err != nil {
			t.Fatalf("connect as %s: %v", user, err)
		}
		t.Cleanup(b.NC.Close)
		return b
	}

	heads := prRepo(t, pt.reposDir, "acme/trust", []int{1, 2})
	procs := map[string]*proc{}
	for _, svc := range []string{"validator", "merger", "notifier", "indexer", "ledger"} {
		args, addr := pt.serveArgs(t, svc, filepath.Join(pt.dir, "data-"+svc), "")
		for i, a := range args {
			if a == "--nats-url" {
				args[i+1] = urlOf(svc)
			}
		}
		p := pt.procs.start(pt.bin, svc, args...)
		p.url = "http://" + addr
		procs[svc] = p
	}
	for _, p := range procs {
		pt.procs.waitReady(ctx, p)
	}
	ledgerAPI := client.New(procs["ledger"].url, "")
	validatorAPI := client.New(procs["validator"].url, "")
	forge, notifier, admin := connect("forge"), connect("notifier"), connect("admin")
	request := func(n int) contracts.Request {
		return contracts.Request{PRID: contracts.PRID("acme/trust", n), Repo: "acme/trust", PRNumber: n,
			SourceBranch: fmt.Sprintf("pr/%d", n), TargetBranch: "main", HeadSHA: heads[n-1].String(),
			Strategy: contracts.StrategyMerge, Title: fmt.Sprintf("PR %d", n), RequestedBy: "alice"}
	}
	waitState := func(prID, state string) client.Saga {
		t.Helper()
		var s client.Saga
		waitCond(t, 90*time.Second, prID+" "+state, func() bool {
			var err error
			s, err = ledgerAPI.Saga(ctx, prID)
			return err == nil && s.State == contracts.State(state)
		})
		return s
	}

	// A genuine run fails at VALIDATING (no CI status yet); the operator's
	// retry — the ledger's replay on its own subject — merges it.
	pr1 := request(1)
	publishRequest(ctx, t, forge, step.NewID(), "https://forge.example/acme", pr1)
	waitState(pr1.PRID, "MERGE_FAILED")
	if err := validatorAPI.PostStatus(ctx, pr1.Repo, pr1.HeadSHA, "ci", "success"); err != nil {
		t.Fatal(err)
	}
	if _, err := ledgerAPI.Retry(ctx, pr1.PRID, client.RetryOptions{}); err != nil {
		t.Fatalf("retry %s: %v", pr1.PRID, err)
	}
	if s := waitState(pr1.PRID, "MERGED"); s.Attempts != 2 {
		t.Errorf("%s merged at attempt %d, want 2 (one retry)", pr1.PRID, s.Attempts)
	}

	// The forge's user forges a replay of PR #2 on its own subject.
	pr2 := request(2)
	if err := validatorAPI.PostStatus(ctx, pr2.Repo, pr2.HeadSHA, "ci", "success"); err != nil {
		t.Fatal(err)
	}
	forgedID := step.NewID()
	forged, err := contracts.New(forgedID, contracts.TypeMergeRequested, contracts.SourceLedger, pr2.PRID, time.Now(), pr2,
		contracts.Meta{CorrelationID: "run-of-nobody", Attempt: 5, ReplayOf: "run-of-nobody"})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := bus.Encode(contracts.SubjectMergeRequested, forged)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := forge.PublishMsg(ctx, msg); err != nil {
		t.Fatalf("the forge's user publishes on %s: %v", contracts.SubjectMergeRequested, err)
	}
	for _, consumer := range []string{contracts.ConsumerValidator, contracts.ConsumerLedger} {
		waitDeadLetter(t, admin, consumer, forgedID, "replays arrive only on "+contracts.ReplaySubject(contracts.TypeMergeRequested))
	}
	if s, err := ledgerAPI.Saga(ctx, pr2.PRID); err == nil {
		t.Fatalf("the forged replay made a saga of %s: %+v", pr2.PRID, s)
	}

	// Subjects that are not the forge's are refused by the server itself.
	denied := func(b *bus.Bus, who, subject string) {
		t.Helper()
		e, err := contracts.NewRequested(step.NewID(), "https://forge.example/acme", time.Now(), pr2, "")
		if err != nil {
			t.Fatal(err)
		}
		m, err := bus.Encode(subject, e)
		if err != nil {
			t.Fatal(err)
		}
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if _, err := b.PublishMsg(pctx, m); err == nil {
			t.Errorf("%s published on %s; the server must refuse it", who, subject)
		}
		if !isPermissionError(b.NC.LastError()) {
			t.Errorf("%s on %s: last error %v, want a permissions violation", who, subject, b.NC.LastError())
		}
	}
	for _, subject := range []string{contracts.ReplaySubject(contracts.TypeMergeRequested), contracts.ReplaySubject(contracts.TypeMergeValidated),
		contracts.SubjectMergeValidated, contracts.StepFailedSubject(contracts.ServiceValidator), contracts.SubjectTimedOut} {
		denied(forge, "the forge", subject)
	}
	denied(notifier, "the notifier", contracts.StepFailedSubject(contracts.ServiceValidator))
	denied(notifier, "the notifier", contracts.StepFailedSubject(contracts.ServiceMerger))

	// PR #2's plain request: attempt 1, merged — the forged replay took no
	// lock and raised no attempt.
	run2 := step.NewID()
	publishRequest(ctx, t, forge, run2, "https://forge.example/acme", pr2)
	if s := waitState(pr2.PRID, "MERGED"); s.Attempts != 1 || s.CorrelationID != run2 {
		t.Errorf("%s merged as run %s attempt %d, want run %s attempt 1", pr2.PRID, s.CorrelationID, s.Attempts, run2)
	}
	bare := filepath.Join(pt.reposDir, "acme", "trust.git")
	for _, f := range []string{prFile(1), prFile(2)} {
		if got := gitMaybe(bare, "show", "main:"+f); got == "" {
			t.Errorf("main lacks %s: %s", f, gittest.Run(t, bare, "log", "--oneline", "main"))
		}
	}

	// The notifier's user on its own step_failed subject, naming VALIDATING:
	// the ledger dead-letters it and PR #2 stays MERGED.
	failedID := step.NewID()
	sf, err := contracts.New(failedID, contracts.TypeStepFailed, contracts.Source(contracts.ServiceNotifier), pr2.PRID, time.Now(),
		contracts.StepFailed{Request: pr2, Step: contracts.StateValidating, Code: contracts.CodeChecksFailed, Reason: "forged"},
		contracts.Meta{CorrelationID: run2, CausationID: run2, Attempt: 1})
	if err != nil {
		t.Fatal(err)
	}
	m, err := bus.Encode(contracts.StepFailedSubject(contracts.ServiceNotifier), sf)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := notifier.PublishMsg(ctx, m); err != nil {
		t.Fatalf("the notifier publishes its own step_failed subject: %v", err)
	}
	waitDeadLetter(t, admin, contracts.ConsumerLedger, failedID, "carries failures of NOTIFYING only")
	if s, err := ledgerAPI.Saga(ctx, pr2.PRID); err != nil || s.State != contracts.StateMerged {
		t.Errorf("%s after the notifier's forged failure: %+v (%v), want MERGED", pr2.PRID, s, err)
	}
}

// startAccountsNATS starts a nats-server process on a free loopback port
// with JetStream and the project's deploy/nats/accounts.conf, its passwords
// from env, and returns its address once it listens. The server is the
// nats-server on PATH, or one built from the module this test builds with.
func startAccountsNATS(t *testing.T, pt procTest, env []string) string {
	t.Helper()
	server, err := exec.LookPath("nats-server")
	if err != nil {
		server = filepath.Join(pt.dir, "nats-server-bin")
		build := exec.Command(goCommand(), "build", "-o", server, "github.com/nats-io/nats-server/v2")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("build nats-server: %v\n%s", err, out)
		}
	}
	dir := filepath.Join(pt.dir, "nats-server")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	accounts, err := os.ReadFile(filepath.Join(deployDir, "nats", "accounts.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "accounts.conf"), accounts, 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	conf := fmt.Sprintf("listen: %q\njetstream { store_dir: %q }\ninclude ./accounts.conf\n", addr, filepath.Join(dir, "js"))
	if err := os.WriteFile(filepath.Join(dir, "server.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	p := pt.procs.startArgv("nats-server", env, server, "-c", filepath.Join(dir, "server.conf"))
	if err := pollReady(pt.ctx, tcpReady(addr), p.done); err != nil {
		t.Fatalf("nats-server: %v: %s", err, logTail(p.log, 10))
	}
	return addr
}

// waitDeadLetter waits until consumer has dead-lettered event id with a
// reason containing want.
func waitDeadLetter(t *testing.T, admin *bus.Bus, consumer, id, want string) {
	t.Helper()
	var reasons []string
	waitCond(t, 60*time.Second, "dead letter of "+id+" by "+consumer, func() bool {
		reasons = deadLetterReasons(t, admin, consumer, id)
		for _, r := range reasons {
			if strings.Contains(r, want) {
				return true
			}
		}
		return false
	})
}

func deadLetterReasons(t *testing.T, admin *bus.Bus, consumer, id string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := admin.JS.OrderedConsumer(ctx, contracts.DLQStream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{contracts.DLQSubject(consumer)},
	})
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for {
		m, err := c.Next(jetstream.FetchMaxWait(300 * time.Millisecond))
		if err != nil {
			return out
		}
		if m.Headers().Get(bus.HeaderMsgID) == contracts.DLQMsgID(consumer, id) {
			out = append(out, nats.Header(m.Headers()).Get(contracts.DLQReasonHeader))
		}
	}
}
