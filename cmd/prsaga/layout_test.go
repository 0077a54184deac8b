package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDependenciesPointInward checks design §1's arrows with `go list -deps`:
// contracts imports nothing of ours, platform only contracts, a service only
// contracts, platform and itself.
func TestDependenciesPointInward(t *testing.T) {
	const prefix = "github.com/prsaga/prsaga/"
	modules := map[string][]string{
		"contracts":          {"contracts"},
		"platform":           {"contracts", "platform"},
		"services/validator": {"contracts", "platform", "services/validator"},
		"services/merger":    {"contracts", "platform", "services/merger"},
		"services/notifier":  {"contracts", "platform", "services/notifier"},
		"services/indexer":   {"contracts", "platform", "services/indexer"},
		"services/ledger":    {"contracts", "platform", "services/ledger"},
	}
	for mod, allowed := range modules {
		cmd := exec.Command("go", "list", "-deps", "./...")
		cmd.Dir = filepath.Join("..", "..", mod)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go list in %s: %v\n%s", mod, err, out)
		}
		for _, pkg := range strings.Fields(string(out)) {
			rest, ours := strings.CutPrefix(pkg, prefix)
			if !ours {
				continue
			}
			ok := false
			for _, a := range allowed {
				ok = ok || rest == a || strings.HasPrefix(rest, a+"/")
			}
			if !ok {
				t.Errorf("%s depends on %s", mod, pkg)
			}
		}
	}
}

// TestDomainPackagesStayPure checks, over everything a service's root
// package (its domain) links — `go list -deps`, not only its direct
// imports — that no NATS, SQL or database driver code is among it: the
// domain reaches the runner only through platform/step and platform/store.
// database/sql/driver is allowed: it is an interface package that
// github.com/google/uuid (event ids) implements, not a driver. An HTTP
// server or client is kept out of the root package's own imports.
func TestDomainPackagesStayPure(t *testing.T) {
	linked := []string{"github.com/nats-io/", "modernc.org/", "github.com/ydb-platform/", "github.com/mattn/", "github.com/jackc/", "github.com/lib/pq"}
	for _, svc := range []string{"validator", "merger", "notifier", "indexer", "ledger"} {
		dir := filepath.Join("..", "..", "services", svc)
		for _, dep := range goList(t, dir, "-deps", ".") {
			bad := dep == "database/sql"
			for _, b := range linked {
				bad = bad || strings.HasPrefix(dep, b)
			}
			if bad {
				t.Errorf("services/%s (domain) links %s", svc, dep)
			}
		}
		for _, imp := range goList(t, dir, "-f", `{{join .Imports " "}}`, ".") {
			if strings.HasPrefix(imp, "net/http") {
				t.Errorf("services/%s (domain) imports %s", svc, imp)
			}
		}
	}
}

func goList(t *testing.T, dir string, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list in %s: %v\n%s", dir, err, out)
	}
	return strings.Fields(string(out))
}
