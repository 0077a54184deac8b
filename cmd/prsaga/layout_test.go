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

// TestDomainPackagesStayPure checks that a service's root package (its
// domain) imports no SQL driver, NATS or HTTP server code.
func TestDomainPackagesStayPure(t *testing.T) {
	for _, svc := range []string{"validator", "merger", "notifier", "indexer", "ledger"} {
		cmd := exec.Command("go", "list", "-f", `{{join .Imports " "}}`, ".")
		cmd.Dir = filepath.Join("..", "..", "services", svc)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go list in %s: %v\n%s", svc, err, out)
		}
		for _, imp := range strings.Fields(string(out)) {
			for _, banned := range []string{"database/sql", "github.com/nats-io/", "net/http", "modernc.org/sqlite"} {
				if strings.HasPrefix(imp, banned) {
					t.Errorf("services/%s (domain) imports %s", svc, imp)
				}
			}
		}
	}
}
