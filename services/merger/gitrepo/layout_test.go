package gitrepo

import (
	"os/exec"
	"strings"
	"testing"
)

// TestPackagesByJob checks the seams of doc.go with `go list -deps`: the
// merge engine and the history read objects through gitobj and nothing
// else of the merger; nothing below gitrepo takes a ref lock but reflock,
// and nothing below gitrepo imports gitrepo.
func TestPackagesByJob(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go tool not installed")
	}
	const prefix = "github.com/prsaga/prsaga/services/merger/gitrepo"
	allowed := map[string][]string{
		"gitobj":  {"gitobj"},
		"history": {"gitobj", "history"},
		"engine":  {"gitobj", "engine"},
		"reflock": {"gitobj", "reflock"},
	}
	for pkg, may := range allowed {
		out, err := exec.Command("go", "list", "-deps", "./"+pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			rest, ours := strings.CutPrefix(dep, prefix)
			if !ours {
				continue
			}
			ok := false
			for _, m := range may {
				ok = ok || rest == "/"+m
			}
			if !ok {
				t.Errorf("%s depends on %s", pkg, dep)
			}
		}
	}
}
