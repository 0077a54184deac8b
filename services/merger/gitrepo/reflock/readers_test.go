package reflock_test

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prsaga/prsaga/services/merger/gitrepo/gitobj"
	"github.com/prsaga/prsaga/services/merger/gitrepo/reflock"
)

// TestReadersSeeOnlyCommittedValues: while a writer moves refs/heads/main
// through a chain of commits, one Update each, readers — goroutines
// reading the ref file and through gitobj.ReadRef, and `git rev-parse` /
// `git show-ref` processes — only ever read a value the writer had
// committed by then (never an empty, partial or unknown one), and each
// reader reads the values in the order they were committed (a rename is
// atomic: once a reader saw a value, it never sees an older one).
func TestReadersSeeOnlyCommittedValues(t *testing.T) {
	const updates = 300
	dir, c := repoWithCommits(t, updates+1)
	ref := gitobj.LoosePath(dir, "main")
	index := map[string]int{}
	for i, h := range c {
		index[h.String()] = i
	}
	// begun is the index of the last value the writer began to commit: a
	// value read is committed, or being committed, when its index is at
	// most begun as read after the read.
	var begun atomic.Int64
	var gitRuns atomic.Int64
	stop := make(chan struct{})

	var mu sync.Mutex
	var bad []string
	report := func(format string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(bad) < 20 {
			bad = append(bad, fmt.Sprintf(format, a...))
		}
	}
	// check judges one value read by reader who; last is the index of the
	// reader's previous value.
	check := func(who, value string, last *int) {
		i, ok := index[value]
		switch {
		case !ok:
			report("%s read %q: not a value of the ref", who, value)
		case int64(i) > begun.Load():
			report("%s read value %d before the writer committed it", who, i)
		case i < *last:
			report("%s read value %d after value %d", who, i, *last)
		default:
			*last = i
		}
	}

	var wg sync.WaitGroup
	for r := range 4 {
		wg.Add(1)
		go func() { // the ref's file, as any reader of loose refs opens it
			defer wg.Done()
			last := 0
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				b, err := os.ReadFile(ref)
				if err != nil {
					report("reader %d: read the ref: %v", r, err)
					return
				}
				s, ok := strings.CutSuffix(string(b), "\n")
				if !ok {
					report("reader %d read %q: no newline", r, b)
					return
				}
				check(fmt.Sprintf("file reader %d", r), s, &last)
			}
		}()
	}
	wg.Add(1)
	go func() { // the merger's own reader
		defer wg.Done()
		last := 0
		for {
			select {
			case <-stop:
				return
			default:
			}
			h, err := gitobj.ReadRef(dir, "main")
			if err != nil {
				report("ReadRef: %v", err)
				return
			}
			check("ReadRef", h.String(), &last)
		}
	}()
	wg.Add(1)
	gitDone := make(chan struct{})
	go func() { // git itself
		defer wg.Done()
		defer close(gitDone)
		last := 0
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			args := []string{"rev-parse", "--verify", "refs/heads/main"}
			if n%2 == 1 {
				args = []string{"show-ref", "--verify", "refs/heads/main"}
			}
			out, err := gitErr(dir, "", args...)
			if err != nil {
				report("git %s: %v: %s", args[0], err, out)
				return
			}
			sha, _, _ := strings.Cut(out, " ")
			check("git "+args[0], sha, &last)
			gitRuns.Add(1)
		}
	}()

	l := reflock.New(dir, gitobj.Durability{})
	deadline := time.Now().Add(waitFor)
	for i := 0; i < updates; i++ {
		// Paced by git's reads, so that its processes see many updates:
		// a condition with a deadline, not a sleep.
		for gitRuns.Load() < int64(i/4) && time.Now().Before(deadline) {
			select {
			case <-gitDone: // failed: reported below
				deadline = time.Now()
			case <-time.After(100 * time.Microsecond):
			}
		}
		begun.Store(int64(i + 1))
		if err := l.Update("main", c[i], c[i+1]); err != nil {
			close(stop)
			wg.Wait()
			t.Fatalf("update %d: %v", i+1, err)
		}
	}
	close(stop)
	wg.Wait()
	if n := gitRuns.Load(); n < updates/4-1 {
		t.Errorf("git read the ref %d times during %d updates; want at least %d", n, updates, updates/4-1)
	}
	for _, b := range bad {
		t.Error(b)
	}
	if got := revParse(t, dir); got != c[updates].String() {
		t.Errorf("main = %s after the updates, want %s", got, c[updates])
	}
	t.Logf("%d updates; git read the ref %d times", updates, gitRuns.Load())
}
