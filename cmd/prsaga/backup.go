package main

import (
	"archive/tar"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/prsaga/prsaga/cmd/prsaga/internal/backup"
	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/config"
	"github.com/prsaga/prsaga/services/indexer/bleveindex"
)

// ydbBackupHint is the answer of backup and restore on a YDB store.
const ydbBackupHint = "PRSAGA_STORE is YDB: back it up with YDB's own tools (ydb tools dump / restore, or export to S3) and record the consumers' positions as docs/operating.md \"Backup and restore\" (On YDB) describes"

// parseSQLiteVerb is parseVerb for backup and restore, which copy the
// services' SQLite databases: it also returns their directory. On a YDB
// store, or a bad one, it says why not on stderr and the verb stops with
// exit code code.
func parseSQLiteVerb(fs *flag.FlagSet, load func() (config.Config, error), args []string, use string, stderr io.Writer, usage func(pos []string) bool) (cfg config.Config, dbDir string, code int, ok bool) {
	if cfg, code, ok = parseVerb(fs, load, args, use, stderr, usage); !ok {
		return cfg, "", code, false
	}
	if cfg.IsYDB() {
		fmt.Fprintf(stderr, "%s: %s\n", fs.Name(), ydbBackupHint)
		return cfg, "", exitUsage, false
	}
	dbDir, err := cfg.SQLiteDir()
	if err != nil {
		return cfg, "", parseError(err, stderr), false
	}
	return cfg, dbDir, exitOK, true
}

// cmdBackup takes an online backup of a deployment on the SQLite store
// into a new directory (design §7): every service's database, the search
// index and a manifest with the stream position each durable consumer had
// applied. It runs beside the services, under load.
func cmdBackup(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	const use = "usage: prsaga backup --to DIR [--timeout D] [--json]"
	fs, load := newFlags("backup", getenv, stderr)
	to := fs.String("to", "", "the backup directory: new, or empty (required)")
	timeout := fs.Duration("timeout", 30*time.Minute, "give up after this long (exit 1; the partial directory is removed)")
	asJSON := fs.Bool("json", false, "print the manifest as JSON")
	cfg, dbDir, code, ok := parseSQLiteVerb(fs, load, args, use, stderr, func(pos []string) bool {
		return len(pos) != 0 || *to == "" || *timeout <= 0
	})
	if !ok {
		return code
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	natsURL := natsURLOf(fs, getenv, cfg)
	b, ok := dialBus(ctx, cfg, natsURL, "backup", "--nats-url / PRSAGA_NATS_URL (or --data to the directory `prsaga dev` runs in); the positions are read from NATS", stderr)
	if !ok {
		return exitFailed
	}
	defer b.Close()
	indexer := indexerURL(fs, getenv, cfg)
	m, err := backup.Take(ctx, backup.Options{
		DBDir: dbDir, JS: b.JS, Out: *to,
		CopyIndex: func(ctx context.Context, dst string) (string, bool, error) {
			return copyIndex(ctx, filepath.Join(cfg.DataDir, "index"), dst, indexer, cfg.ClientToken())
		},
	})
	if err != nil {
		fmt.Fprintf(stderr, "prsaga backup: %v\n", err)
		return exitFailed
	}
	if *asJSON {
		printJSON(stdout, m)
		return exitOK
	}
	fmt.Fprintf(stdout, "backed up to %s at %s (stream %s sequences %d..%d)\n", *to, m.CreatedAt.Format(time.RFC3339), m.Stream.Name, m.Stream.FirstSeq, m.Stream.LastSeq)
	for _, d := range m.Databases {
		fmt.Fprintf(stdout, "  database %-10s %9d bytes  schema %s\n", d.Service, d.Bytes, schemaLine(d.Schema))
	}
	if m.Index != nil {
		fmt.Fprintf(stdout, "  search index (copied by the %s)\n", map[string]string{"indexer": "running indexer", "file": "backup: no indexer held it"}[m.Index.Via])
	} else {
		fmt.Fprintln(stdout, "  no search index")
	}
	for _, c := range m.Consumers {
		fmt.Fprintf(stdout, "  consumer %-15s resumes from sequence %d\n", c.Name, c.ResumeFrom)
	}
	return exitOK
}

// indexerURL is where the indexer serves its routes: its own address when
// it runs alone (PRSAGA_INDEXER_HTTP_ADDR), else the API's.
func indexerURL(fs *flag.FlagSet, getenv func(string) string, cfg config.Config) string {
	if a := cfg.ServiceHTTPAddr[contracts.ServiceIndexer]; a != "" {
		return "http://" + a
	}
	return apiURLOf(fs, getenv, cfg)
}

// copyIndex copies the search index in dir to dst consistently: itself
// when no indexer holds the index (bleve allows one opener, and an idle
// index opens at once), else by asking the running indexer, which copies
// it online (GET /api/v1/index/snapshot). ok is false when there is no
// index yet.
func copyIndex(ctx context.Context, dir, dst, indexer, token string) (via string, ok bool, err error) {
	if _, err := os.Stat(filepath.Join(dir, "index_meta.json")); errors.Is(err, os.ErrNotExist) {
		return "", false, nil
	}
	x, err := bleveindex.Open(dir, 500*time.Millisecond)
	if err == nil {
		defer x.Close()
		return "file", true, x.CopyTo(dst)
	}
	if !errors.Is(err, bleveindex.ErrLocked) {
		return "", false, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, indexer+"/api/v1/index/snapshot", nil)
	if err != nil {
		return "", false, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", false, fmt.Errorf("an indexer holds %s; asking it for a copy: %w (set --api, or PRSAGA_INDEXER_HTTP_ADDR where it runs alone)", dir, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return "", false, fmt.Errorf("an indexer holds %s; asking %s for a copy: %s: %s", dir, indexer, resp.Status, strings.TrimSpace(string(msg)))
	}
	if err := untar(resp.Body, dst); err != nil {
		return "", false, fmt.Errorf("the indexer's copy: %w", err)
	}
	return "indexer", true, nil
}

// untar writes the tar stream r under dir (created), refusing any entry
// that is not a plain file or directory inside it.
func untar(r io.Reader, dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := path.Clean(h.Name)
		if name == "." || path.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
			return fmt.Errorf("entry %q is outside the index", h.Name)
		}
		target := filepath.Join(dir, filepath.FromSlash(name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o700); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o700); err != nil {
				return err
			}
			if err := createFrom(target, 0o600, tr); err != nil {
				return err
			}
		default:
			return fmt.Errorf("entry %q is not a file or a directory", h.Name)
		}
	}
}

// createFrom writes what r holds to a new file at path.
func createFrom(path string, perm os.FileMode, r io.Reader) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// schemaLine prints a database's last migration per component, in a
// stable order: "ledger 0005_saga_repair.sql, platform 0003_….sql".
func schemaLine(schema map[string]string) string {
	parts := make([]string, 0, len(schema))
	for _, c := range slices.Sorted(maps.Keys(schema)) {
		parts = append(parts, c+" "+schema[c])
	}
	return strings.Join(parts, ", ")
}
