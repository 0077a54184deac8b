package stack

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/platform/store"
	"github.com/prsaga/prsaga/platform/ydb"
	ledgersqlite "github.com/prsaga/prsaga/services/ledger/sqlite"
)

// SQLiteMigrations are a service's own SQLite migrations (the platform's
// outbox and inbox are applied before them).
func SQLiteMigrations(service string) []sqlite.Migrations {
	if m, ok := module(service); ok && m.SQLite.FS != nil {
		return []sqlite.Migrations{m.SQLite}
	}
	return nil
}

// ydbInboxTTL is the inbox TTL of the YDB schema
// (platform/ydb/migrations): it must outlast the stream's messages.
const ydbInboxTTL = 8 * 24 * time.Hour

// openDB opens the service's own database on the configured store:
// PRSAGA_STORE=sqlite:///dir is one file per service (<dir>/<service>.sqlite),
// a YDB DSN is one directory per service (<database>/prsaga/<service>) of the
// one database, over one connection the services of the process share. The
// service's tables are created or migrated on the way.
func (s *Stack) openDB(ctx context.Context, name string) (store.DB, error) {
	var db store.DB
	if s.cfg.IsYDB() {
		if s.ydb == nil {
			conn, err := ydb.Connect(ctx, s.cfg.Store)
			if err != nil {
				return nil, fmt.Errorf("PRSAGA_STORE: %w", err)
			}
			s.ydb = conn
			// Closers run in reverse: the connection closes after every
			// database opened on it.
			s.closers = append(s.closers, func() error {
				cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				return conn.Close(cctx)
			})
			if s.cfg.StreamMaxAge > ydbInboxTTL {
				s.Log.Warn("PRSAGA_STREAM_MAX_AGE outlasts the YDB inbox TTL: a message redelivered after the TTL would be handled again; "+
					"raise it with ALTER TABLE inbox SET (TTL = Interval(\"P<days>D\") ON processed_at) in each service's directory",
					"stream_max_age", s.cfg.StreamMaxAge.String(), "inbox_ttl", ydbInboxTTL.String())
			}
		}
		ydir, err := ydb.Open(ctx, s.ydb, ydb.Options{Prefix: YDBPrefix(name)}, YDBMigrations(name)...)
		if err != nil {
			return nil, err
		}
		db = ydir
	} else {
		dir, err := s.cfg.SQLiteDir()
		if err != nil {
			return nil, err
		}
		path := filepath.Join(dir, name+".sqlite")
		if name == contracts.ServiceLedger {
			// prsaga ledger verify --repair refuses while this is held.
			release, err := ledgersqlite.HoldShared(path)
			if errors.Is(err, ledgersqlite.ErrRunning) {
				return nil, fmt.Errorf("ledger database: %w: prsaga ledger verify --repair is running", err)
			}
			if err != nil {
				return nil, fmt.Errorf("ledger database: %w", err)
			}
			s.closers = append(s.closers, release)
		}
		opts := sqlite.Options{Sync: s.cfg.Durability == "sync"}
		if s.Log != nil {
			opts.Log = s.Log.With("service", name)
		}
		sdb, err := sqlite.Open(ctx, path, opts, SQLiteMigrations(name)...)
		if err != nil {
			return nil, err
		}
		db = sdb
	}
	s.closers = append(s.closers, db.Close)
	s.Telemetry.WatchOutbox(name, db.OutboxStats)
	return db, nil
}
