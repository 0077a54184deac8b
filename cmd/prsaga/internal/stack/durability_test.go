package stack

import (
	"context"
	"flag"
	"path/filepath"
	"testing"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/config"
	"github.com/prsaga/prsaga/platform/sqlite"
	"github.com/prsaga/prsaga/platform/store"
	"github.com/prsaga/prsaga/platform/telemetry"
)

// TestDurabilityReachesTheStores checks that PRSAGA_DURABILITY, read as
// `prsaga` reads it, reaches what the stack opens (design §5): every
// service's SQLite connections run synchronous=FULL in sync mode and
// NORMAL otherwise, and the embedded JetStream syncs every write
// (sync_always) only in sync mode. (The merger fsyncs objects and refs in
// both modes: gitrepo does not take the setting.)
func TestDurabilityReachesTheStores(t *testing.T) {
	for _, tt := range []struct {
		mode       string
		wantSync   int // PRAGMA synchronous: 1 NORMAL, 2 FULL
		wantAlways bool
	}{{"process", 1, false}, {"sync", 2, true}} {
		t.Run(tt.mode, func(t *testing.T) {
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			dir := t.TempDir()
			load := config.Bind(fs, func(name string) string {
				if name == "PRSAGA_DURABILITY" {
					return tt.mode
				}
				return ""
			})
			if err := fs.Parse([]string{"--data", dir}); err != nil {
				t.Fatal(err)
			}
			cfg, err := load()
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			tel, err := telemetry.New(ctx, telemetry.Config{})
			if err != nil {
				t.Fatal(err)
			}
			s := &Stack{cfg: cfg, Telemetry: tel}
			t.Cleanup(s.Stop)
			for _, name := range AllServices {
				db, err := s.openDB(ctx, name)
				if err != nil {
					t.Fatalf("open %s: %v", name, err)
				}
				sdb, ok := db.(*sqlite.DB)
				if !ok {
					t.Fatalf("%s: store %T, want SQLite", name, db)
				}
				var got int
				if err := sdb.Reader().QueryRowContext(ctx, "PRAGMA synchronous").Scan(&got); err != nil {
					t.Fatal(err)
				}
				if got != tt.wantSync {
					t.Errorf("%s: PRAGMA synchronous = %d, want %d", name, got, tt.wantSync)
				}
				var wsync int
				if err := sdb.Update(ctx, func(tx store.Tx) error {
					stx, ok := tx.(*sqlite.Tx)
					if !ok {
						t.Fatalf("%s: transaction %T, want SQLite's", name, tx)
					}
					return stx.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&wsync)
				}); err != nil {
					t.Fatal(err)
				}
				if wsync != tt.wantSync {
					t.Errorf("%s: writer's PRAGMA synchronous = %d, want %d", name, wsync, tt.wantSync)
				}
			}
			if err := s.connect(ctx, Options{NATSListen: "-"}); err != nil {
				t.Fatal(err)
			}
			if got := s.NATS.Server.JetStreamConfig().SyncAlways; got != tt.wantAlways {
				t.Errorf("JetStream sync_always = %v, want %v", got, tt.wantAlways)
			}
			if got := s.NATS.Server.JetStreamConfig().StoreDir; filepath.Dir(got) != filepath.Join(dir, "nats") && got != filepath.Join(dir, "nats") {
				t.Errorf("JetStream store %s, want under %s", got, filepath.Join(dir, "nats"))
			}
			if _, err := s.Bus.JS.Stream(ctx, contracts.Stream); err != nil {
				t.Errorf("stream %s: %v", contracts.Stream, err)
			}
		})
	}
}
