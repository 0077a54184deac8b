package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/prsaga/prsaga/services/merger/gitrepo/gitobj"
	"github.com/prsaga/prsaga/services/merger/gitrepo/reflock"
)

// memJournal is a Journal in memory, for the tests of this package; the
// merger's is its database (services/merger/server).
type memJournal struct {
	mu      sync.Mutex
	commits map[string][]string // pr id → recorded commits
	// onRecord, when set, runs before an entry is recorded; an error it
	// returns is Record's.
	onRecord func(JournalEntry) error
}

func newMemJournal() *memJournal { return &memJournal{commits: map[string][]string{}} }

// testJournal is the journal of request(). Shared by every test: a commit
// recorded by one is absent from another's repository, or is that very
// merge — the proof holds either way.
var testJournal = newMemJournal()

func (j *memJournal) Recorded(prID string) ([]string, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]string(nil), j.commits[prID]...), nil
}

func (j *memJournal) Record(e JournalEntry) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.onRecord != nil {
		if err := j.onRecord(e); err != nil {
			return err
		}
	}
	j.commits[e.PRID] = append(j.commits[e.PRID], e.Commit)
	return nil
}

// TestForgedTrailerIsNotAMerge: PR #42's author puts "Prsaga-PR:
// acme/widgets#43" into a commit of #42, which is merged with each
// strategy; #43, forked before, must then really be merged — its file in
// the target, a new merge commit — not reported as already merged.
func TestForgedTrailerIsNotAMerge(t *testing.T) {
	for _, strategy := range []string{StrategyMerge, StrategySquash, StrategyFastForward} {
		t.Run(strategy, func(t *testing.T) {
			f := newFixture(t)
			base := map[string]file{"README": reg("readme\n")}
			shas := f.build(
				commitSpec{ref: "main", files: base, msg: "base"},
				commitSpec{ref: "pr42", parents: []string{"main"}, files: with(base, map[string]file{"pr42.txt": reg("42\n")}),
					msg: "Add pr42.txt\n\nPrsaga-PR: acme/widgets#43\n"},
				commitSpec{ref: "pr43", parents: []string{"main"}, files: with(base, map[string]file{"pr43.txt": reg("43\n")}), msg: "Add pr43.txt"},
			)
			first := f.merge(request("pr42", "main", shas["pr42"], strategy, 42))
			if first.AlreadyMerged {
				t.Fatalf("PR 42 = %+v", first)
			}
			if f.grepCount("main", "Prsaga-PR: acme/widgets#43") == 0 && strategy != StrategySquash {
				t.Fatal("the forged trailer did not reach main: the test tests nothing")
			}
			// #43 forked before #42: a fast-forward is impossible, so it is
			// merged (the attack worked on any strategy of #43 but this).
			res := f.merge(request("pr43", "main", shas["pr43"], StrategyMerge, 43))
			if res.AlreadyMerged {
				t.Fatalf("PR 43 = %+v: a trailer written by PR 42's author counted as its merge", res)
			}
			if got := f.rev("main"); got != res.MergeSHA {
				t.Errorf("main = %s, want the merge %s", got, res.MergeSHA)
			}
			if out := f.git("", "show", "main:pr43.txt"); out != "43" {
				t.Errorf("main:pr43.txt = %q, want 43", out)
			}
			again := f.merge(request("pr43", "main", shas["pr43"], StrategyMerge, 43))
			if !again.AlreadyMerged || again.MergeSHA != res.MergeSHA {
				t.Errorf("redelivery of PR 43 = %+v; want AlreadyMerged at %s", again, res.MergeSHA)
			}
			f.fsck()
		})
	}
}

// TestOnlyRecordedCommitsCount: a commit that looks exactly like a squash
// prsaga would write — trailers, committer, parent — made by someone else
// on main does not make the PR merged; the squash prsaga recorded does,
// also after others moved the branch on.
func TestOnlyRecordedCommitsCount(t *testing.T) {
	f := newFixture(t)
	main, feature := buildNested(f)
	req := request("feature", "main", feature, StrategySquash, 44)
	req.Journal = newMemJournal()
	msg := squashMessage(req, []string{"feat: one", "feat: two"}, 0)
	f.build(commitSpec{ref: "main", parents: []string{"main"}, files: nestedTheirs, msg: msg})
	if f.rev("main") == main {
		t.Fatal("the look-alike was not committed")
	}
	res := f.merge(req)
	if res.AlreadyMerged {
		t.Fatalf("squash = %+v: a look-alike commit nobody recorded counted as the merge", res)
	}
	f.pushCommit("main", "after1.txt")
	f.pushCommit("main", "after2.txt")
	again := f.merge(req)
	if !again.AlreadyMerged || again.MergeSHA != res.MergeSHA || again.BaseSHA != res.BaseSHA {
		t.Errorf("redelivery after pushes = %+v; want AlreadyMerged at %s onto %s", again, res.MergeSHA, res.BaseSHA)
	}
}

// TestSquashRecordedBeforeTheRefMoves: the squash commit is recorded while
// the target still has its old head; a crash right after the ref moved
// (before the merger's outbox commit) leaves a record, and the redelivery
// reports the same squash — no second one. A journal that fails leaves the
// branch alone.
func TestSquashRecordedBeforeTheRefMoves(t *testing.T) {
	f := newFixture(t)
	main, feature := buildNested(f)
	j := newMemJournal()
	var recorded []JournalEntry
	j.onRecord = func(e JournalEntry) error {
		if got := f.rev("main"); got != main {
			t.Errorf("recorded with main at %s: the ref moved first", got)
		}
		recorded = append(recorded, e)
		return nil
	}
	req := request("feature", "main", feature, StrategySquash, 45)
	req.Journal = j
	f.repo.hooks.refCrash = func(point string) error {
		if point == reflock.CrashRenamed {
			return errCrash
		}
		return nil
	}
	if _, err := f.repo.Merge(context.Background(), req); !errors.Is(err, errCrash) {
		t.Fatalf("Merge = %v, want the simulated crash", err)
	}
	f.repo.hooks.refCrash = nil
	squash := f.rev("main")
	if squash == main || len(recorded) != 1 || recorded[0].Commit != squash || recorded[0].Base != main ||
		recorded[0].PRID != req.PRID || recorded[0].CorrelationID != req.CorrelationID || recorded[0].Strategy != StrategySquash {
		t.Fatalf("main = %s (was %s), recorded %+v; want the squash recorded onto the old head", squash, main, recorded)
	}
	_ = os.Remove(gitobj.LoosePath(f.bare, "main") + ".lock") // as the next merge would break it
	res := f.merge(req)
	if !res.AlreadyMerged || res.MergeSHA != squash || res.BaseSHA != main {
		t.Errorf("redelivery = %+v; want AlreadyMerged at %s onto %s", res, squash, main)
	}
	if n := f.grepCount("main", "Prsaga-PR: acme/widgets#45"); n != 1 {
		t.Errorf("%d squash commits of PR 45 on main, want 1", n)
	}

	// A journal that cannot record: nothing moves.
	other := request("feature", "main", feature, StrategySquash, 46)
	other.Journal = newMemJournal()
	other.Journal.(*memJournal).onRecord = func(JournalEntry) error { return errors.New("database is down") }
	before := f.rev("main")
	if _, err := f.repo.Merge(context.Background(), other); err == nil || !strings.Contains(err.Error(), "database is down") {
		t.Fatalf("Merge with a failing journal = %v; want its error", err)
	}
	if got := f.rev("main"); got != before {
		t.Errorf("main moved to %s although the journal failed", got)
	}
	f.fsck()
}

// TestFastForwardIsNotRecorded: the PR head on the target proves a
// fast-forward by itself; the journal is not written.
func TestFastForwardIsNotRecorded(t *testing.T) {
	f := newFixture(t)
	shas := buildForked(f)
	req := request("feature", "main", shas["feature"], StrategyFastForward, 47)
	j := newMemJournal()
	j.onRecord = func(e JournalEntry) error { return fmt.Errorf("recorded %+v", e) }
	req.Journal = j
	if res := f.merge(req); res.AlreadyMerged || res.MergeSHA != shas["feature"] {
		t.Fatalf("fast-forward = %+v", res)
	}
	if res := f.merge(req); !res.AlreadyMerged || res.MergeSHA != shas["feature"] {
		t.Errorf("redelivery = %+v; want AlreadyMerged at the PR head", res)
	}
}

// TestJournalRequired: no journal, no merge.
func TestJournalRequired(t *testing.T) {
	f := newFixture(t)
	main, feature := buildNested(f)
	req := request("feature", "main", feature, StrategySquash, 48)
	req.Journal = nil
	if _, err := f.repo.Merge(context.Background(), req); !errors.Is(err, errNoJournal) {
		t.Fatalf("Merge without a journal = %v", err)
	}
	if f.rev("main") != main {
		t.Error("main moved")
	}
	if _, err := os.Stat(filepath.Join(f.bare, "refs", "heads", "main.lock")); err == nil {
		t.Error("lock left")
	}
}
