package backup

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"
)

// ManifestFile is the manifest's name in a backup directory. It is written
// last: a directory without it is not a (complete) backup.
const ManifestFile = "manifest.json"

// FormatVersion is the manifest format this package writes and reads.
const FormatVersion = 1

// Manifest describes one backup.
type Manifest struct {
	Format    int       `json:"format"`
	Prsaga    Build     `json:"prsaga"`
	CreatedAt time.Time `json:"created_at"`
	Store     string    `json:"store"` // "sqlite"
	// Databases are the services' copies, <service>.sqlite in the backup.
	Databases []Database `json:"databases"`
	// Index is the search index's copy, the directory "index" in the
	// backup; nil when there was none to copy.
	Index *IndexCopy `json:"index,omitempty"`
	// Stream is stream PRSAGA as it was when the positions were read.
	Stream Stream `json:"stream"`
	// Consumers are the durable consumers' positions, read before the
	// databases were copied.
	Consumers []Consumer `json:"consumers"`
}

// Build names the prsaga that took the backup.
type Build struct {
	Version  string `json:"version"`
	Commit   string `json:"commit,omitempty"`
	Modified bool   `json:"modified,omitempty"`
}

// Database is one service's database copy.
type Database struct {
	Service string `json:"service"`
	File    string `json:"file"`
	Bytes   int64  `json:"bytes"`
	// Schema is the last migration applied, per component (the platform's
	// outbox and inbox, the service's own tables).
	Schema map[string]string `json:"schema"`
}

// IndexCopy is the search index's copy.
type IndexCopy struct {
	Dir string `json:"dir"`
	// Via says how it was taken: "indexer" (the running indexer copied
	// it, over HTTP) or "file" (no indexer held it; opened here).
	Via string `json:"via"`
}

// Stream is the stream's state when the positions were read.
type Stream struct {
	Name     string `json:"name"`
	FirstSeq uint64 `json:"first_seq"`
	LastSeq  uint64 `json:"last_seq"`
	MaxAge   string `json:"max_age"`
}

// Consumer is one durable consumer's position.
type Consumer struct {
	Name string `json:"name"`
	// Service is the service whose database holds the consumer's inbox.
	Service string `json:"service"`
	// AckFloor is the stream sequence up to which every message of the
	// consumer was acknowledged, hence applied in the copy.
	AckFloor uint64 `json:"ack_floor"`
	// ResumeFrom is where restore restarts the consumer: AckFloor + 1.
	ResumeFrom uint64 `json:"resume_from"`
}

// ThisBuild is the running binary's version and commit, as the Go
// toolchain recorded them.
func ThisBuild() Build {
	b := Build{Version: "(devel)"}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	if v := info.Main.Version; v != "" {
		b.Version = v
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Commit = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// ReadManifest reads and checks the manifest of the backup in dir: every
// name in it is checked before it is used as a path.
func ReadManifest(dir string) (Manifest, error) {
	var m Manifest
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if errors.Is(err, os.ErrNotExist) {
		return m, fmt.Errorf("%s has no %s: not a backup, or one that did not finish", dir, ManifestFile)
	}
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("%s: %w", filepath.Join(dir, ManifestFile), err)
	}
	return m, m.Validate(dir)
}

// Validate checks the manifest against the backup directory dir.
func (m Manifest) Validate(dir string) error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if m.Format != FormatVersion {
		bad("manifest format %d, this prsaga reads %d", m.Format, FormatVersion)
	}
	if m.Store != "sqlite" {
		bad("store %q: only sqlite backups are restored by prsaga (YDB: docs/operating.md)", m.Store)
	}
	if m.CreatedAt.IsZero() {
		bad("no created_at")
	}
	seen := map[string]bool{}
	for _, d := range m.Databases {
		if !knownService(d.Service) || seen[d.Service] {
			bad("database of %q: not a service, or named twice", d.Service)
			continue
		}
		seen[d.Service] = true
		if d.File != d.Service+".sqlite" {
			bad("database of %s: file %q, want %s.sqlite", d.Service, d.File, d.Service)
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, d.File)); err != nil {
			bad("database of %s: %v", d.Service, err)
		}
	}
	if m.Index != nil {
		if m.Index.Dir != "index" {
			bad("index dir %q, want index", m.Index.Dir)
		} else if fi, err := os.Stat(filepath.Join(dir, m.Index.Dir)); err != nil || !fi.IsDir() {
			bad("index: %s is not a directory", filepath.Join(dir, m.Index.Dir))
		}
	}
	for _, c := range m.Consumers {
		if !validName(c.Name) || c.ResumeFrom != c.AckFloor+1 {
			bad("consumer %q: bad name or resume_from %d (ack floor %d)", c.Name, c.ResumeFrom, c.AckFloor)
		}
	}
	return errors.Join(errs...)
}

// validName is a JetStream consumer name: no wildcards, dots, separators
// or spaces.
func validName(s string) bool {
	return s != "" && len(s) <= 255 && !strings.ContainsAny(s, ">*. /\\\t\r\n")
}
