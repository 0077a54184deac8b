package backup

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A manifest naming paths or consumers it must not is refused before any
// of its names is used.
func TestReadManifestRefusesHostileNames(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "merger.sqlite"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	good := Manifest{Format: FormatVersion, Store: "sqlite", CreatedAt: time.Now(),
		Databases: []Database{{Service: "merger", File: "merger.sqlite"}},
		Consumers: []Consumer{{Name: "merger", Service: "merger", AckFloor: 4, ResumeFrom: 5}}}
	write := func(m Manifest) {
		b, _ := json.Marshal(m)
		if err := os.WriteFile(filepath.Join(dir, ManifestFile), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(good)
	if _, err := ReadManifest(dir); err != nil {
		t.Fatalf("a good manifest: %v", err)
	}
	for name, bad := range map[string]func(*Manifest){
		"a path as file":      func(m *Manifest) { m.Databases[0].File = "../../etc/passwd" },
		"an unknown service":  func(m *Manifest) { m.Databases[0].Service, m.Databases[0].File = "../x", "../x.sqlite" },
		"a wildcard consumer": func(m *Manifest) { m.Consumers[0].Name = "merger.>" },
		"a position mismatch": func(m *Manifest) { m.Consumers[0].ResumeFrom = 1 },
		"an index elsewhere":  func(m *Manifest) { m.Index = &IndexCopy{Dir: "/tmp", Via: "file"} },
		"a YDB store":         func(m *Manifest) { m.Store = "ydb" },
		"another format":      func(m *Manifest) { m.Format = 99 },
		"a missing database": func(m *Manifest) {
			m.Databases = append(m.Databases, Database{Service: "ledger", File: "ledger.sqlite"})
		},
	} {
		m := good
		m.Databases = append([]Database(nil), good.Databases...)
		m.Consumers = append([]Consumer(nil), good.Consumers...)
		bad(&m)
		write(m)
		if _, err := ReadManifest(dir); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := os.Remove(filepath.Join(dir, ManifestFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadManifest(dir); err == nil || !strings.Contains(err.Error(), "not a backup") {
		t.Fatalf("no manifest: %v, want not a backup", err)
	}
}
