package service

import (
	"context"
	"log/slog"
	"time"
)

// Retention bounds what a service's store keeps of the platform's tables
// (design §5). A store with TTLs of its own (YDB) is left to them.
type Retention struct {
	// Inbox keeps inbox entries this long: never less than the stream's
	// MaxAge, or a redelivery after pruning would be handled again.
	Inbox time.Duration
	// Sent keeps outbox rows this long after they were sent.
	Sent time.Duration
	// Interval is the pause between rounds; 0 prunes nothing.
	Interval time.Duration
	// Batch is the rows one statement deletes (default 500): a round is
	// many short write transactions, never one long one.
	Batch int
	// Tables are a service's own tables pruned in the same rounds
	// (Spec.Prune), after the inbox and the outbox.
	Tables []TablePrune
}

// TablePrune is one of a service's own tables that grows with traffic:
// Delete removes up to limit of its rows that are older than olderThan
// and no longer needed, and returns how many (the next batch goes on
// while a batch comes back full).
type TablePrune struct {
	Table  string
	Age    time.Duration
	Delete func(ctx context.Context, olderThan time.Duration, limit int) (int64, error)
}

// Pruner is a store that prunes in bounded batches (platform/sqlite).
type Pruner interface {
	PruneInbox(ctx context.Context, olderThan time.Duration, limit int) (int64, error)
	PruneSent(ctx context.Context, olderThan time.Duration, limit int) (int64, error)
}

// Sizer is a store that reports its sizes (rows per table, file bytes).
type Sizer interface {
	Sizes(ctx context.Context) (map[string]int64, error)
}

// PruneTelemetry is told what pruning removed and what the store holds
// after each round (telemetry.Telemetry is one).
type PruneTelemetry interface {
	Pruned(service, table string, rows int64)
	StoreSizes(service string, sizes map[string]int64)
}

// prune runs pruning rounds every r.Interval until ctx ends.
func prune(ctx context.Context, name string, p Pruner, r Retention, tel Telemetry, log *slog.Logger) {
	if r.Batch <= 0 {
		r.Batch = 500
	}
	t := time.NewTicker(r.Interval)
	defer t.Stop()
	for {
		if err := PruneRound(ctx, name, p, r, tel); err != nil && ctx.Err() == nil {
			log.WarnContext(ctx, "pruning failed; next round will try again", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// PruneRound deletes what retention no longer needs, batch by batch,
// gives the freed pages back when p is a Vacuumer, and reports it to tel
// when tel is a PruneTelemetry. A nil p prunes only r.Tables.
func PruneRound(ctx context.Context, name string, p Pruner, r Retention, tel any) error {
	if r.Batch <= 0 {
		r.Batch = 500
	}
	pt, _ := tel.(PruneTelemetry)
	jobs := r.Tables
	if p != nil { // nil: a store whose inbox and outbox prune themselves
		jobs = append([]TablePrune{{"inbox", r.Inbox, p.PruneInbox}, {"outbox", r.Sent, p.PruneSent}}, r.Tables...)
	}
	for _, job := range jobs {
		for ctx.Err() == nil {
			n, err := job.Delete(ctx, job.Age, r.Batch)
			if err != nil {
				return err
			}
			if pt != nil && n > 0 {
				pt.Pruned(name, job.Table, n)
			}
			if n < int64(r.Batch) {
				break
			}
		}
	}
	if err := vacuum(ctx, p); err != nil {
		return err
	}
	if s, ok := p.(Sizer); ok && pt != nil {
		sizes, err := s.Sizes(ctx)
		if err != nil {
			return err
		}
		pt.StoreSizes(name, sizes)
	}
	return ctx.Err()
}
