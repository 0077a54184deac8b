package gitrepo

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/prsaga/prsaga/services/merger/gitrepo/reflock"
)

// TestDurabilityModes: in sync mode a merge fsyncs its new objects, their
// directories and the ref's new value before the ref moves, and the refs
// directory after; in process mode it fsyncs nothing — and both land the
// same merge.
func TestDurabilityModes(t *testing.T) {
	for _, sync_ := range []bool{true, false} {
		name := map[bool]string{true: "sync", false: "process"}[sync_]
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			_, feature := buildNested(f)
			var mu sync.Mutex
			var events []string // "fsync <path>" and "point <crash point>", in order
			repos, err := NewReposWithOptions(f.root, Options{Sync: sync_, OnFsync: func(p string) {
				mu.Lock()
				defer mu.Unlock()
				events = append(events, "fsync "+p)
			}})
			if err != nil {
				t.Fatal(err)
			}
			repo, err := repos.Open(testRepo)
			if err != nil {
				t.Fatal(err)
			}
			repo.hooks.refCrash = func(point string) error {
				mu.Lock()
				defer mu.Unlock()
				events = append(events, "point "+point)
				return nil
			}
			res, err := repo.Merge(context.Background(), request("feature", "main", feature, StrategyMerge, 42))
			if err != nil {
				t.Fatal(err)
			}
			if got := f.rev("main"); got != res.MergeSHA {
				t.Fatalf("main = %s, want %s", got, res.MergeSHA)
			}
			f.fsck()

			index := func(prefix string) int {
				return slices.IndexFunc(events, func(e string) bool { return strings.HasPrefix(e, prefix) })
			}
			fsyncs := slices.DeleteFunc(slices.Clone(events), func(e string) bool { return !strings.HasPrefix(e, "fsync ") })
			if !sync_ {
				if len(fsyncs) > 0 {
					t.Fatalf("process mode fsynced %v", fsyncs)
				}
				return
			}
			moved := index("point " + reflock.CrashLockWritten)
			if moved < 0 {
				t.Fatalf("no ref update seen: %v", events)
			}
			commit := filepath.Join(f.bare, "objects", res.MergeSHA[:2], res.MergeSHA[2:])
			for what, prefix := range map[string]string{
				"the merge commit":    "fsync " + commit,
				"its directory":       "fsync " + filepath.Dir(commit),
				"objects/":            "fsync " + filepath.Join(f.bare, "objects"),
				"the ref's new value": "fsync " + filepath.Join(f.bare, reflock.WorkDir, "ref-"),
			} {
				if i := index(prefix); i < 0 || i > moved {
					t.Errorf("%s: not fsynced before the ref moved (%q at %d, ref moved at %d)\n%s", what, prefix, i, moved, strings.Join(events, "\n"))
				}
			}
			if i, renamed := slices.Index(events, "fsync "+filepath.Join(f.bare, "refs", "heads")), index("point "+reflock.CrashRenamed); i < renamed {
				t.Errorf("refs/heads not fsynced after the rename:\n%s", strings.Join(events, "\n"))
			}
		})
	}
}

// TestRefKeepsGitsMode: the ref a merge writes is readable by others, as
// git writes refs (0666 less the umask), not private to the merger.
func TestRefKeepsGitsMode(t *testing.T) {
	f := newFixture(t)
	_, feature := buildNested(f)
	f.merge(request("feature", "main", feature, StrategyMerge, 42))
	fi, err := os.Stat(filepath.Join(f.bare, "refs", "heads", "main"))
	if err != nil {
		t.Fatal(err)
	}
	// The umask, read without setting it (syscall.Umask would, process-wide).
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status")
	}
	_, after, ok := strings.Cut(string(status), "Umask:\t")
	umask, perr := strconv.ParseUint(strings.Fields(after + " x")[0], 8, 32)
	if !ok || perr != nil {
		t.Skip("no umask in /proc/self/status")
	}
	if want := os.FileMode(0o666 &^ umask); fi.Mode().Perm() != want {
		t.Errorf("refs/heads/main has mode %v, want %v", fi.Mode().Perm(), want)
	}
}
