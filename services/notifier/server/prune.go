package server

import (
	"github.com/prsaga/prsaga/platform/service"
	psqlite "github.com/prsaga/prsaga/platform/sqlite"
	nsqlite "github.com/prsaga/prsaga/services/notifier/sqlite"
)

// prune is the notifier's own table pruned with the inbox and the outbox:
// the delivery rows of finished runs, on SQLite (YDB's delivery table has
// a TTL of its own). None when RetentionDeliveries is 0.
func (s *Server) prune() []service.TablePrune {
	db, ok := s.opts.DB.(*psqlite.DB)
	if !ok || s.opts.RetentionDeliveries <= 0 {
		return nil
	}
	st := &nsqlite.Store{DB: db}
	return []service.TablePrune{{Table: "delivery", Age: s.opts.RetentionDeliveries, Delete: st.PruneDeliveries}}
}
