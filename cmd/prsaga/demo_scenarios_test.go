package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// prepareDemo builds three repositories step by step: the first step that
// fails is the error it returns, and nothing after it is written.
func TestPrepareDemoStopsAtTheFirstError(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "acme"), 0o777); err != nil {
		t.Fatal(err)
	}
	// A file where the second repository goes makes its init fail.
	if err := os.WriteFile(filepath.Join(dir, "acme", "gadgets.git"), nil, 0o666); err != nil {
		t.Fatal(err)
	}
	scs, err := prepareDemo(dir, func() {})
	if err == nil || !strings.Contains(err.Error(), "acme/gadgets") {
		t.Fatalf("prepareDemo = %d scenarios, %v; want the gadgets init's error", len(scs), err)
	}
	if _, err := os.Stat(filepath.Join(dir, "acme", "tools.git")); !os.IsNotExist(err) {
		t.Errorf("the tools repository was written after the error (stat: %v)", err)
	}

	scs, err = prepareDemo(t.TempDir(), func() {})
	if err != nil {
		t.Fatal(err)
	}
	heads := map[string]bool{}
	for _, sc := range scs {
		if len(sc.pr.HeadSHA) != 40 || strings.Trim(sc.pr.HeadSHA, "0") == "" || heads[sc.pr.HeadSHA] {
			t.Errorf("%s: head %q, want a distinct commit", sc.name, sc.pr.HeadSHA)
		}
		heads[sc.pr.HeadSHA] = true
	}
	if len(scs) != 5 {
		t.Errorf("%d scenarios, want the five of design §7", len(scs))
	}
}
