// Command schemafixtures writes the upgrade fixtures: for every service's
// database, one small SQLite file per earlier schema version, made by that
// version's migrations and holding representative rows. Each service's
// upgrade test opens copies of them with today's code (docs/operating.md,
// "Upgrades").
//
// A schema version of a store is a set of migration files (the platform's
// plus the service's own) that a commit of the repository's history had:
// the migration runner records files by name, so a commit that only edits
// a file's comments is the same version. The current set (the working
// tree's) is today's version and gets no fixture.
//
// Run it from the repository root, with the history at hand (not a shallow
// clone), after adding a migration:
//
//	go run ./platform/sqlite/schemafixtures
//
// It reads each version's migration files with `git show <commit>:<path>`
// and applies them with the SQLite engine the services use (modernc), as
// the migration runner of that version did: statements split at ";" and a
// newline, one transaction per file, recorded in schema_migrations. Rows
// are written with plain SQL in the form the code of that time wrote them
// (outbox headers as encoding/json writes a nats.Header, events as
// CloudEvents JSON), so the fixtures do not change when today's code does.
// Existing fixture files are rewritten; running it twice changes nothing.
package main

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers driver "sqlite"
)

const platformDir = "platform/sqlite/migrations"

// A store is one service's database file: the platform's migrations, then
// the service's own (dir, "" when it has none).
type store struct {
	service string
	dir     string // the service's migrations
	out     string // where its fixtures go
}

var stores = []store{
	{"indexer", "", "platform/sqlite/testdata/schema"},
	{"validator", "services/validator/sqlite/migrations", "services/validator/sqlite/testdata/schema"},
	{"merger", "services/merger/sqlite/migrations", "services/merger/sqlite/testdata/schema"},
	{"notifier", "services/notifier/sqlite/migrations", "services/notifier/sqlite/testdata/schema"},
	{"ledger", "services/ledger/sqlite/migrations", "services/ledger/sqlite/testdata/schema"},
}

// migration is one file of a version.
type migration struct {
	component, name, path string
}

// version is a store's set of migration files as a commit had them.
type version struct {
	commit, date string
	files        []migration
}

func (v version) key() string {
	var b strings.Builder
	for _, f := range v.files {
		b.WriteString(f.component + "/" + f.name + "\n")
	}
	return b.String()
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "schemafixtures:", err)
		os.Exit(1)
	}
}

func run() error {
	if _, err := os.Stat(platformDir); err != nil {
		return errors.New("run from the repository root")
	}
	for _, s := range stores {
		versions, err := earlierVersions(s)
		if err != nil {
			return fmt.Errorf("%s: %w", s.service, err)
		}
		if err := os.MkdirAll(s.out, 0o755); err != nil {
			return err
		}
		for _, v := range versions {
			file := filepath.Join(s.out, v.date+"-"+v.commit[:7]+".db")
			if err := write(s, v, file); err != nil {
				return fmt.Errorf("%s at %s: %w", s.service, v.commit[:7], err)
			}
			fmt.Printf("%s\t%d migrations\n", file, len(v.files))
		}
	}
	return nil
}

// earlierVersions lists the store's schema versions in history order, each
// at the first commit that had it, leaving out today's.
func earlierVersions(s store) ([]version, error) {
	dirs := []string{platformDir}
	if s.dir != "" {
		dirs = append(dirs, s.dir)
	}
	log, err := git(append([]string{"log", "--reverse", "--format=%H %cs", "--"}, dirs...)...)
	if err != nil {
		return nil, err
	}
	current, err := filesAt(s, "")
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{current.key(): true}
	var out []version
	for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
		commit, date, _ := strings.Cut(line, " ")
		v, err := filesAt(s, commit)
		if err != nil {
			return nil, err
		}
		if len(v.files) == 0 || seen[v.key()] {
			continue
		}
		seen[v.key()] = true
		v.commit, v.date = commit, date
		out = append(out, v)
	}
	return out, nil
}

// filesAt lists the store's migration files at commit ("" = the working
// tree), platform first, each component's in name order (the runner's).
func filesAt(s store, commit string) (version, error) {
	var v version
	for _, c := range []struct{ component, dir string }{{"platform", platformDir}, {s.service, s.dir}} {
		if c.dir == "" {
			continue
		}
		var names []string
		if commit == "" {
			paths, err := filepath.Glob(filepath.Join(c.dir, "*.sql"))
			if err != nil {
				return v, err
			}
			for _, p := range paths {
				names = append(names, filepath.Base(p))
			}
		} else {
			ls, err := git("ls-tree", "--name-only", commit, c.dir+"/")
			if err != nil {
				return v, err
			}
			for _, p := range strings.Fields(ls) {
				if strings.HasSuffix(p, ".sql") {
					names = append(names, path.Base(p))
				}
			}
		}
		// git ls-tree and Glob both list in byte order, as fs.Glob does.
		for _, n := range names {
			v.files = append(v.files, migration{component: c.component, name: n, path: c.dir + "/" + n})
		}
	}
	return v, nil
}

// write makes the fixture of s at v in file.
func write(s store, v version, file string) error {
	tmp, err := os.MkdirTemp("", "schemafixtures")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	dbPath := filepath.Join(tmp, "db.sqlite")
	// The pragmas of the store at every version so far: the file is in
	// WAL mode, as a service leaves it.
	db, err := sql.Open("sqlite", "file:"+dbPath+"?_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)")
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if err := migrate(db, v); err != nil {
		return err
	}
	if err := seed(db, s.service); err != nil {
		return err
	}
	// Closing the last connection checkpoints the WAL into the file and
	// removes it: the one file is the whole database.
	if err := db.Close(); err != nil {
		return err
	}
	body, err := os.ReadFile(dbPath)
	if err != nil {
		return err
	}
	if _, err := os.Stat(dbPath + "-wal"); err == nil {
		return errors.New("the WAL was not checkpointed")
	}
	return os.WriteFile(file, body, 0o644)
}

// migrate applies v's files as the migration runner does.
func migrate(db *sql.DB, v version) error {
	if _, err := db.Exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
		component TEXT NOT NULL, name TEXT NOT NULL, applied_at INTEGER NOT NULL,
		PRIMARY KEY (component, name))`); err != nil {
		return err
	}
	for _, f := range v.files {
		body, err := git("show", v.commit+":"+f.path)
		if err != nil {
			return err
		}
		tx, err := db.Begin()
		if err != nil {
			return err
		}
		for _, stmt := range strings.Split(body, ";\n") {
			if strings.TrimSpace(stmt) == "" {
				continue
			}
			if _, err := tx.Exec(stmt); err != nil {
				tx.Rollback()
				return fmt.Errorf("%s: %w", f.path, err)
			}
		}
		if _, err := tx.Exec(`INSERT INTO schema_migrations (component, name, applied_at) VALUES (?, ?, ?)`,
			f.component, f.name, at.UnixMilli()); err != nil {
			tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	return nil
}

// at is when the fixtures' rows were written.
var at = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func git(args ...string) (string, error) {
	out, err := exec.Command("git", args...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, ee.Stderr)
		}
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return string(out), nil
}
