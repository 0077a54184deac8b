package ledger

import (
	"context"
	"log/slog"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/step"
	"github.com/prsaga/prsaga/platform/store"
)

// Ledger is the ledger's step: it projects every saga event into its
// tables (design §5). Safe for concurrent use.
type Ledger struct {
	Store *Store
	Proj  *Projector
}

// OnSagaEvent projects one event. It has no side effect outside the
// transaction: everything happens in the runner's commit, together with
// the inbox row and the outbox.
func (l *Ledger) OnSagaEvent(ctx context.Context, env contracts.Envelope, log *slog.Logger) (step.Commit, error) {
	return func(tx store.Tx) error {
		ltx, err := l.Store.Bind(tx)
		if err != nil {
			return err
		}
		_, err = l.Proj.Project(ctx, ltx, env, log)
		return err
	}, nil
}

// Apply projects one event in a transaction of its own, as a second ledger
// instance handling a redelivery would (OnSagaEvent does the same inside
// the runner's transaction). Safe to call concurrently with the consumer.
func (l *Ledger) Apply(ctx context.Context, env contracts.Envelope, log *slog.Logger) (Result, error) {
	var res Result
	err := l.Store.Update(ctx, func(tx Tx) error {
		var err error
		res, err = l.Proj.Project(ctx, tx, env, log)
		return err
	})
	return res, err
}
