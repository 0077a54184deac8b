package backup

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	_ "modernc.org/sqlite" // driver "sqlite"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/durable"
)

// Options of a backup.
type Options struct {
	// DBDir holds the services' databases, <service>.sqlite.
	DBDir string
	// CopyIndex writes a consistent copy of the search index into dst (a
	// directory that does not exist) and says how ("indexer", "file");
	// ok false when there is no index to copy. Nil: no index.
	CopyIndex func(ctx context.Context, dst string) (via string, ok bool, err error)
	// JS reads the stream and its consumers.
	JS jetstream.JetStream
	// Out is the backup directory; it must not exist, or be empty.
	Out string
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Take backs up a running (or stopped) deployment into o.Out and returns
// its manifest: the consumers' positions first, then each database
// (VACUUM INTO: a consistent copy of one read transaction, writers go
// on), then the index, then the manifest. On error the partial directory
// is removed.
func Take(ctx context.Context, o Options) (_ Manifest, err error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if err := emptyDir(o.Out); err != nil {
		return Manifest{}, err
	}
	defer func() {
		if err != nil {
			_ = os.RemoveAll(o.Out)
		}
	}()
	m := Manifest{Format: FormatVersion, Prsaga: ThisBuild(), CreatedAt: o.Now().UTC(), Store: "sqlite"}
	if m.Stream, m.Consumers, err = Positions(ctx, o.JS); err != nil {
		return m, err
	}
	for _, svc := range services {
		src := filepath.Join(o.DBDir, svc+".sqlite")
		if _, err := os.Stat(src); errors.Is(err, os.ErrNotExist) {
			continue // a service this deployment does not run (yet)
		}
		d, err := copyDB(ctx, src, filepath.Join(o.Out, svc+".sqlite"))
		if err != nil {
			return m, fmt.Errorf("back up the %s database: %w", svc, err)
		}
		d.Service = svc
		m.Databases = append(m.Databases, d)
	}
	if o.CopyIndex != nil {
		via, ok, err := o.CopyIndex(ctx, filepath.Join(o.Out, "index"))
		if err != nil {
			return m, fmt.Errorf("back up the search index: %w", err)
		}
		if ok {
			m.Index = &IndexCopy{Dir: "index", Via: via}
		}
	}
	return m, durable.WriteJSON(filepath.Join(o.Out, ManifestFile), m, 0o600)
}

// Positions reads stream PRSAGA's state and every durable consumer's ack
// floor, sorted by name.
func Positions(ctx context.Context, js jetstream.JetStream) (Stream, []Consumer, error) {
	s, err := js.Stream(ctx, contracts.Stream)
	if err != nil {
		return Stream{}, nil, fmt.Errorf("stream %s: %w", contracts.Stream, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return Stream{}, nil, fmt.Errorf("stream %s: %w", contracts.Stream, err)
	}
	st := Stream{Name: contracts.Stream, FirstSeq: info.State.FirstSeq, LastSeq: info.State.LastSeq, MaxAge: info.Config.MaxAge.String()}
	var out []Consumer
	lister := s.ListConsumers(ctx)
	for ci := range lister.Info() {
		if ci.Config.Durable == "" {
			continue // an ordered consumer reading the stream (trace, reindex)
		}
		out = append(out, Consumer{Name: ci.Name, Service: serviceOf(ci.Name), AckFloor: ci.AckFloor.Stream, ResumeFrom: ci.AckFloor.Stream + 1})
	}
	if err := lister.Err(); err != nil {
		return st, nil, fmt.Errorf("consumers of %s: %w", contracts.Stream, err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return st, out, nil
}

// copyDB copies the database at src into dst with VACUUM INTO: one read
// transaction, so a consistent copy however busy src is, without blocking
// its writer (WAL). The copy is checked (quick_check) and its schema
// versions read.
func copyDB(ctx context.Context, src, dst string) (Database, error) {
	db, err := openFile(src, false)
	if err != nil {
		return Database{}, err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `VACUUM INTO ?`, dst); err != nil {
		return Database{}, fmt.Errorf("VACUUM INTO: %w", err)
	}
	if err := durable.Sync(dst); err != nil {
		return Database{}, err
	}
	d := Database{File: filepath.Base(dst)}
	cp, err := openFile(dst, true)
	if err != nil {
		return d, err
	}
	defer cp.Close()
	if err := Check(ctx, cp); err != nil {
		return d, fmt.Errorf("the copy: %w", err)
	}
	if d.Schema, err = schema(ctx, cp); err != nil {
		return d, err
	}
	fi, err := os.Stat(dst)
	if err != nil {
		return d, err
	}
	d.Bytes = fi.Size()
	return d, nil
}

// openFile opens a database file without migrating it; readOnly opens it
// immutable-free read-only.
func openFile(path string, readOnly bool) (*sql.DB, error) {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	if readOnly {
		q.Set("mode", "ro")
	}
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

// Check runs SQLite's quick_check on db: nil when it answers ok.
func Check(ctx context.Context, db *sql.DB) error {
	rows, err := db.QueryContext(ctx, `PRAGMA quick_check`)
	if err != nil {
		return err
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return err
		}
		if s != "ok" {
			problems = append(problems, s)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(problems) > 0 {
		return fmt.Errorf("quick_check: %v", problems)
	}
	return nil
}

// schema is the last migration applied per component.
func schema(ctx context.Context, db *sql.DB) (map[string]string, error) {
	rows, err := db.QueryContext(ctx, `SELECT component, max(name) FROM schema_migrations GROUP BY component`)
	if err != nil {
		return nil, fmt.Errorf("schema versions: %w", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var c, n string
		if err := rows.Scan(&c, &n); err != nil {
			return nil, err
		}
		out[c] = n
	}
	return out, rows.Err()
}

// emptyDir makes dir, or accepts it empty.
func emptyDir(dir string) error {
	if dir == "" {
		return errors.New("no backup directory given")
	}
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return os.MkdirAll(dir, 0o700)
	}
	if err != nil {
		return err
	}
	if len(ents) > 0 {
		return fmt.Errorf("%s is not empty: back up into a new directory", dir)
	}
	return nil
}
