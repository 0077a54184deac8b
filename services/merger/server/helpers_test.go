package server_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/gittest"
	"github.com/prsaga/prsaga/platform/natsembed"
	"github.com/prsaga/prsaga/platform/natsembed/natstest"
	"github.com/prsaga/prsaga/platform/service"
	psqlite "github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/platform/sqlite/sqlitetest"
	"github.com/prsaga/prsaga/platform/step"
	"github.com/prsaga/prsaga/services/merger/server"
)

// wait bounds every wait of these tests.
const wait = 90 * time.Second

const testRepo = "acme/widgets"

// gitRepo is the bare repository acme/widgets under a repos dir, driven
// with the git command (platform/gittest).
type gitRepo struct {
	*gittest.Repo
	root string // the repos dir
}

func newGitRepo(t *testing.T) *gitRepo {
	t.Helper()
	root := t.TempDir()
	return &gitRepo{Repo: gittest.NewBare(t, root, testRepo), root: root}
}

// run runs git ("" stdin) in the bare repository and returns its trimmed output.
func (g *gitRepo) run(stdin string, args ...string) string { return g.GitInput(stdin, args...) }

func (g *gitRepo) rev(r string) string { return g.Rev(r) }

// mergesOf lists main's commits carrying PR #n's trailer, each with the
// run (Prsaga-Correlation-Id) that wrote it.
func (g *gitRepo) mergesOf(n int) map[string]string {
	out := g.run("", "log", "--format=%H %(trailers:key=Prsaga-Correlation-Id,valueonly,separator=%x2C)", "-E",
		fmt.Sprintf("--grep=^Prsaga-PR: %s$", contracts.PRID(testRepo, n)), "main")
	runs := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if sha, corr, ok := strings.Cut(strings.TrimSpace(line), " "); ok {
			runs[sha] = corr
		} else if line != "" {
			runs[line] = ""
		}
	}
	return runs
}

// pr7BesideMain is the repository of a PR merged as main moves on: main's
// first commit, PR 7 branched from it changing line 14 of shared.txt, and
// main's second commit changing line 2 — a merge of PR 7 is clean.
func pr7BesideMain(t *testing.T) *gitRepo {
	t.Helper()
	g := newGitRepo(t)
	im := &importer{}
	im.commit("main", "", map[string]string{"README": "readme\n", "shared.txt": sharedFile(nil)})
	im.commit("pr7", "main", map[string]string{"shared.txt": sharedFile(map[int]bool{14: true})})
	im.commit("main", "", map[string]string{"shared.txt": sharedFile(map[int]bool{2: true})})
	g.fastImport(im)
	return g
}

// importer writes commits with git fast-import.
type importer struct {
	b strings.Builder
	n int
}

// commit adds a commit on branch (from: a ref, or "" for the branch's
// current tip or none) setting files (path → content; "" deletes).
func (im *importer) commit(branch, from string, files map[string]string) {
	im.n++
	fmt.Fprintf(&im.b, "commit refs/heads/%s\ncommitter C <c@example.com> %d +0000\ndata 3\nc%d\n",
		branch, 1735689600+im.n, im.n%10)
	if from != "" {
		fmt.Fprintf(&im.b, "from refs/heads/%s\n", from)
	}
	for p, c := range files {
		if c == "" {
			fmt.Fprintf(&im.b, "D %s\n", p)
			continue
		}
		fmt.Fprintf(&im.b, "M 100644 inline %s\ndata %d\n%s\n", p, len(c), c)
	}
	im.b.WriteString("\n")
}

func (g *gitRepo) fastImport(im *importer) {
	g.run(im.b.String(), "fast-import", "--quiet")
}

// startMerger starts a merger — its own database and bus connection, as a
// separate process would have — on reposDir, with opts (Backoff and
// RelayPoll defaulted). It is stopped by t.Cleanup.
func startMerger(t *testing.T, ns *natsembed.Server, cfg bus.Config, reposDir string, opts service.Options) *psqlite.DB {
	t.Helper()
	return startMergerOn(t, ns, cfg, reposDir, sqlitetest.Open(t, server.Migrations), opts)
}

// startMergerOn is startMerger on db: replicas of the merger share its
// database (design §9), each through its own handle as a process would.
func startMergerOn(t *testing.T, ns *natsembed.Server, cfg bus.Config, reposDir string, db *psqlite.DB, opts service.Options) *psqlite.DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg.InProcess, cfg.Name = ns.Server, t.Name()
	b, err := bus.Connect(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	srv, err := server.New(server.Options{DB: db, ReposDir: reposDir})
	if err != nil {
		t.Fatal(err)
	}
	if opts.Backoff == nil {
		opts.Backoff = []time.Duration{50 * time.Millisecond}
	}
	if opts.RelayPoll == 0 {
		opts.RelayPoll = 100 * time.Millisecond
	}
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	run, err := service.Start(ctx, srv.Spec(), b, log, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(run.Stop)
	return db
}

// drained waits until db's outbox has sent everything.
func drained(t *testing.T, db *psqlite.DB) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		pending, _, err := db.OutboxStats(context.Background())
		if err == nil && pending == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("outbox not drained within %s: %d pending, %v", wait, pending, err)
		}
		time.Sleep(10 * time.Millisecond) // polling a condition, bounded by the deadline
	}
}

// validated publishes the validator's validated event for PR #n (its own
// run, correlation id corr) and returns the event.
func validated(t *testing.T, b *bus.Bus, n int, source, head, strategy, corr string) *event.Event {
	t.Helper()
	req := contracts.Request{
		PRID: contracts.PRID(testRepo, n), Repo: testRepo, PRNumber: n,
		SourceBranch: source, TargetBranch: "main", HeadSHA: head, Strategy: strategy,
		Title: fmt.Sprintf("PR %d", n), RequestedBy: "alice",
	}
	e, err := contracts.New(step.NewID(), contracts.TypeMergeValidated, contracts.Source(contracts.ServiceValidator),
		req.PRID, time.Now(), contracts.Validated{Request: req}, contracts.Meta{CorrelationID: corr, CausationID: corr, Attempt: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.Publish(ctx, e); err != nil {
		t.Fatal(err)
	}
	return e
}

// merged is one merged event seen on the stream.
type merged struct {
	corr string
	contracts.Merged
}

// oneMerged reads the stream's outcomes and returns the one merged event
// there must be, of run corr; a step_failed fails the test.
func oneMerged(t *testing.T, b *bus.Bus, corr string) merged {
	t.Helper()
	ms, failed := outcomes(t, b)
	if len(failed) > 0 {
		t.Errorf("step_failed: %+v", failed)
	}
	if len(ms) != 1 || ms[0].corr != corr {
		t.Fatalf("merged events: %+v, want exactly one for run %s", ms, corr)
	}
	return ms[0]
}

// outcomes reads every merged and step_failed event on the stream so far
// (waiting up to a second for more once the stream is read).
func outcomes(t *testing.T, b *bus.Bus) (ms []merged, failed []contracts.StepFailed) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := b.JS.OrderedConsumer(ctx, contracts.Stream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{contracts.SubjectMerged, contracts.StepFailedSubject(contracts.ServiceMerger)},
	})
	if err != nil {
		t.Fatal(err)
	}
	for {
		m, err := c.Next(jetstream.FetchMaxWait(time.Second))
		if err != nil {
			return ms, failed // nothing more within a second: the stream is read
		}
		e, err := bus.Decode(m.Headers(), m.Data())
		if err != nil {
			t.Fatalf("undecodable event: %v", err)
		}
		meta, err := contracts.MetaOf(e)
		if err != nil {
			t.Fatal(err)
		}
		switch e.Type() {
		case contracts.TypeMerged:
			var p contracts.Merged
			if err := contracts.Decode(e, &p); err != nil {
				t.Fatal(err)
			}
			ms = append(ms, merged{meta.CorrelationID, p})
		case contracts.TypeStepFailed:
			var p contracts.StepFailed
			if err := contracts.Decode(e, &p); err != nil {
				t.Fatal(err)
			}
			failed = append(failed, p)
		}
	}
}

// settled waits until the merger consumer has nothing pending or unacked
// and the stream holds want merged events; it fails the test after wait.
func settled(t *testing.T, b *bus.Bus, want int) {
	t.Helper()
	ctx := t.Context()
	natstest.WaitFor(t, wait, fmt.Sprintf("the merger to settle with %d merged events", want), func() bool {
		return natstest.Idle(ctx, b, contracts.ConsumerMerger) && natstest.OnSubject(t, ctx, b, contracts.SubjectMerged) >= uint64(want)
	})
}

// openShared opens the SQLite file at path with the merger's tables, as one
// more process sharing it would; closed by t.Cleanup.
func openShared(t *testing.T, path string) *psqlite.DB {
	t.Helper()
	db, err := psqlite.Open(context.Background(), path, psqlite.Options{}, server.Migrations)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
