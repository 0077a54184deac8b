package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	"github.com/prsaga/prsaga/platform/config"
	"github.com/prsaga/prsaga/platform/gitreach"
	"github.com/prsaga/prsaga/platform/repopath"
	"github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/services/ledger"
	ledgerjs "github.com/prsaga/prsaga/services/ledger/jetstream"
	ledgersqlite "github.com/prsaga/prsaga/services/ledger/sqlite"
)

// cmdLedger is the ledger's maintenance verbs: `prsaga ledger verify`.
func cmdLedger(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	const use = "usage: prsaga ledger verify [--json] [--stream] [--repair [--force] [--actor NAME]] [--scratch DIR]"
	if len(args) == 0 || args[0] != "verify" {
		if len(args) == 1 && (args[0] == "--help" || args[0] == "-h") {
			fmt.Fprintln(stdout, use)
			return exitOK
		}
		fmt.Fprintln(stderr, use)
		return exitUsage
	}
	return cmdLedgerVerify(ctx, args[1:], getenv, stdout, stderr)
}

// Exit codes of ledger verify: exitOK when the tables agree with the log
// and every merged saga's merge commit is on its target branch, exitFailed
// when they differ or a merge commit is not there (or cannot be checked),
// exitUsage (2) when verify could not run. The merge commits are checked
// in the repos dir (--repos / PRSAGA_REPOS_DIR) when it exists.
func cmdLedgerVerify(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	const use = "usage: prsaga ledger verify [--json] [--stream] [--repair [--force] [--actor NAME]] [--scratch DIR]"
	fs, load := newFlags("ledger verify", getenv, stderr)
	asJSON := fs.Bool("json", false, "print the report as JSON (every differing saga with its differences)")
	repair := fs.Bool("repair", false, "rewrite every differing saga's row and transitions as the log re-derives them, one audited transaction per saga (saga_repair); refused while a ledger has the database open")
	force := fs.Bool("force", false, "with --repair: repair even though a ledger seems to be running (its writes may be lost or undone)")
	actor := fs.String("actor", defaultActor(), "with --repair: who repairs, recorded in the audit row")
	stream := fs.Bool("stream", false, "also read the JetStream stream (--nats-url / PRSAGA_NATS_URL, or the prsaga dev of --data) for the bodies retention pruned, so that sagas whose events the stream still holds are verified too")
	scratch := fs.String("scratch", "", "directory for the scratch database the log is replayed into (default a temporary directory, removed afterwards)")
	cfg, code, ok := parseVerb(fs, load, args, use, stderr, func(pos []string) bool {
		return len(pos) != 0 || (*force && !*repair)
	})
	if !ok {
		return code
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "prsaga ledger verify: "+format+"\n", a...)
		return exitUsage
	}
	if cfg.IsYDB() {
		return fail("the store is YDB: verify reads a SQLite ledger database (see docs/operating.md \"Verify and repair the ledger\")")
	}
	dir, err := cfg.SQLiteDir()
	if err != nil {
		return fail("%v", err)
	}
	path := filepath.Join(dir, contracts.ServiceLedger+".sqlite")
	if _, err := os.Stat(path); err != nil {
		return fail("no ledger database at %s (set --data or PRSAGA_STORE): %v", path, err)
	}
	if *repair {
		release, err := ledgersqlite.HoldExclusive(path)
		switch {
		case errors.Is(err, ledgersqlite.ErrRunning) && !*force:
			return fail("refusing to repair: a ledger (or another prsaga process writing the ledger's tables) has %s open: stop it first, or pass --force", path)
		case errors.Is(err, ledgersqlite.ErrRunning):
			fmt.Fprintf(stderr, "prsaga ledger verify: warning: a ledger has %s open; repairing anyway (--force): its concurrent writes may be undone\n", path)
		case err != nil:
			return fail("%v", err)
		default:
			defer release()
		}
	}
	live, err := sqlite.Open(ctx, path, sqlite.Options{Sync: true}, ledgersqlite.Migrations)
	if err != nil {
		return fail("open %s: %v", path, err)
	}
	defer live.Close()
	sdir := *scratch
	if sdir == "" {
		if sdir, err = os.MkdirTemp("", "prsaga-verify-"); err != nil {
			return fail("scratch directory: %v", err)
		}
		defer os.RemoveAll(sdir)
	}
	spath := filepath.Join(sdir, "ledger-rederived.sqlite")
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(spath + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fail("scratch database: %v", err)
		}
	}
	sdb, err := sqlite.Open(ctx, spath, sqlite.Options{}, ledgersqlite.Migrations)
	if err != nil {
		return fail("scratch database: %v", err)
	}
	defer sdb.Close()

	tables := ledgersqlite.NewTables(live)
	r := &ledger.Rederiver{Scratch: ledgersqlite.NewStore(sdb)}
	if *stream {
		bodies, err := streamBodies(ctx, tables, natsURLOf(fs, getenv, cfg), cfg)
		if err != nil {
			refusedHint(stderr, err, "--nats-url / PRSAGA_NATS_URL (or --data to the directory `prsaga dev` runs in)")
			return fail("%v", err)
		}
		r.Body = func(id string) ([]byte, bool) { b, ok := bodies[id]; return b, ok }
	}
	if fi, err := os.Stat(cfg.ReposDir); err == nil && fi.IsDir() {
		r.Branches = branches{gitreach.New(cfg.ReposDir)}
	} else {
		fmt.Fprintf(stderr, "prsaga ledger verify: merge commits not checked against their branches: no repos dir at %s (--repos / PRSAGA_REPOS_DIR)\n", cfg.ReposDir)
	}
	rep, err := ledger.Verify(ctx, tables, r)
	if err != nil {
		return fail("%v", err)
	}
	found := len(rep.Differ)
	if *repair && found > 0 {
		a := ledger.RepairAudit{Actor: *actor, At: time.Now().UTC(), Reason: "repair: prsaga ledger verify --repair"}
		if err := ledger.Repair(ctx, tables, &rep, a); err != nil {
			printVerify(stdout, rep, *asJSON)
			return fail("%v (%d sagas repaired before it)", err, rep.Repaired)
		}
	}
	printVerify(stdout, rep, *asJSON)
	if found > 0 && !*repair || rep.NotRepaired > 0 || len(rep.OffBranch) > 0 {
		return exitFailed
	}
	return exitOK
}

func printVerify(w io.Writer, rep ledger.VerifyReport, asJSON bool) {
	if asJSON {
		b, _ := json.MarshalIndent(rep, "", "  ")
		fmt.Fprintln(w, string(b))
		return
	}
	fmt.Fprintf(w, "%d sagas: %d agree with the log, %d differ, %d not verifiable from the log (event bodies pruned)\n",
		rep.Sagas, rep.Agree, len(rep.Differ), rep.Unverifiable)
	for _, c := range rep.Differ {
		fmt.Fprintf(w, "%s:\n", c.PRID)
		for _, d := range c.Diffs {
			fmt.Fprintf(w, "  %s\n", describeDiff(d))
		}
	}
	if rep.MergesChecked > 0 || len(rep.OffBranch) > 0 || rep.MergesUnchecked > 0 {
		fmt.Fprintf(w, "%d merged sagas checked against their target branches: %d not on it, %d not checkable (target branch unknown, or repository not in the repos dir)\n",
			rep.MergesChecked, len(rep.OffBranch), rep.MergesUnchecked)
	}
	for _, o := range rep.OffBranch {
		fmt.Fprintf(w, "%s: merge commit %s on %s of %s: %s\n", o.PRID, o.MergeSHA, o.Branch, o.Repo, o.Problem)
	}
	if rep.Repaired > 0 {
		fmt.Fprintf(w, "repaired %d sagas (audited in saga_repair)\n", rep.Repaired)
	}
	if rep.NotRepaired > 0 {
		fmt.Fprintf(w, "left %d sagas alone: an event of theirs cannot be read\n", rep.NotRepaired)
	}
}

func describeDiff(d ledger.Diff) string {
	switch d.What {
	case "missing row":
		return "missing row: the log has " + d.Log
	case "extra row":
		return "extra row: no event makes " + d.Live
	case "column":
		return fmt.Sprintf("%s: live %q, log %q", d.Column, d.Live, d.Log)
	case "missing transition":
		return fmt.Sprintf("transition %d missing: the log has %s", d.Seq, d.Log)
	case ledger.DiffUnreadable:
		return fmt.Sprintf("event %s cannot be read (%s): the saga cannot be re-derived or repaired", d.Column, d.Log)
	case "extra transition":
		return fmt.Sprintf("transition %d extra: no event makes %s", d.Seq, d.Live)
	}
	return fmt.Sprintf("transition %d %s: live %q, log %q", d.Seq, d.Column, d.Live, d.Log)
}

// branches is the repos dir for ledger verify: a repository it does not
// have is ledger.ErrNoRepository.
type branches struct{ repos *gitreach.Repos }

func (b branches) Reaches(ctx context.Context, repo, branch, commit string) (bool, error) {
	ok, err := b.repos.Reaches(ctx, repo, branch, commit)
	if errors.Is(err, repopath.ErrNotFound) {
		return false, fmt.Errorf("%w: %v", ledger.ErrNoRepository, err)
	}
	return ok, err
}

// streamBodies are the pruned event bodies the stream still holds.
func streamBodies(ctx context.Context, tables *ledgersqlite.Tables, url string, cfg config.Config) (map[string][]byte, error) {
	want, err := tables.PrunedEventIDs(ctx)
	if err != nil || len(want) == 0 {
		return nil, err
	}
	b, err := bus.Connect(ctx, clientBus(cfg, url, "ledger-verify"))
	if err != nil {
		return nil, err
	}
	defer b.Close()
	return ledgerjs.Bodies(ctx, b.JS, want)
}

// defaultActor names the operator in a repair's audit row: user@host.
func defaultActor() string {
	name := "unknown"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	host, _ := os.Hostname()
	return name + "@" + host
}
