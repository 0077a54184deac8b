package server

import (
	"context"
	"time"

	"github.com/prsaga/prsaga/platform/service"
	psqlite "github.com/prsaga/prsaga/platform/sqlite"
	pydb "github.com/prsaga/prsaga/platform/ydb"
	nsqlite "github.com/prsaga/prsaga/services/notifier/sqlite"
	nydb "github.com/prsaga/prsaga/services/notifier/ydb"
)

// prune is the notifier's own table pruned with the inbox and the outbox:
// the delivery rows of finished runs. None when RetentionDeliveries is 0.
func (s *Server) prune() []service.TablePrune {
	if s.opts.RetentionDeliveries <= 0 {
		return nil
	}
	var del func(context.Context, time.Duration, int) (int64, error)
	switch db := s.opts.DB.(type) {
	case *psqlite.DB:
		del = (&nsqlite.Store{DB: db}).PruneDeliveries
	case *pydb.DB:
		del = (&nydb.DeliveryPruner{DB: db}).PruneDeliveries
	default:
		return nil
	}
	return []service.TablePrune{{Table: "delivery", Age: s.opts.RetentionDeliveries, Delete: del}}
}
