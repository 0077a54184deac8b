package durable

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// existing is a file state.json in a new directory, holding content.
func existing(t *testing.T, content string, perm os.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.json")
	if err := os.WriteFile(path, []byte(content), perm); err != nil {
		t.Fatal(err)
	}
	return path
}

// WriteJSON replaces the file whole and leaves no temporary file behind.
func TestWriteJSONReplacesTheFile(t *testing.T) {
	path := existing(t, `{"old":true}`, 0o600)
	want := map[string]int{"a": 1, "b": 2}
	if err := WriteJSON(path, want, 0o640); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); s != "{\n  \"a\": 1,\n  \"b\": 2\n}\n" {
		t.Errorf("file = %q, want the indented JSON and a newline", s)
	}
	var got map[string]int
	if err := json.Unmarshal(b, &got); err != nil || len(got) != 2 || got["a"] != 1 || got["b"] != 2 {
		t.Errorf("file decodes to %v (%v), want %v", got, err, want)
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("the temporary file is left behind (%v)", err)
	}
}

// A value that is not JSON leaves the file as it was.
func TestWriteJSONRefusesAValueThatIsNotJSON(t *testing.T) {
	path := existing(t, "{}\n", 0o600)
	if err := WriteJSON(path, func() {}, 0o600); err == nil {
		t.Fatal("WriteJSON of a func succeeded")
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "{}\n" {
		t.Errorf("file = %q (%v), want it unchanged", b, err)
	}
}

func TestSyncMissing(t *testing.T) {
	if err := Sync(filepath.Join(t.TempDir(), "missing")); !os.IsNotExist(err) {
		t.Errorf("Sync of a missing file = %v, want not-exist", err)
	}
}
