package server

import (
	"context"
	"fmt"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/httpx"
	"github.com/prsaga/prsaga/platform/service"
	nydb "github.com/prsaga/prsaga/services/notifier/ydb"
)

// Module is the notifier as a process assembles it. Its step may take its
// webhook retry budget beyond the delivery budget, and the ledger's
// watchdog must allow for that (StepBudgets).
var Module = service.Module{
	Name:        contracts.ServiceNotifier,
	SQLite:      Migrations,
	YDB:         nydb.Migrations,
	StepBudgets: map[contracts.State]time.Duration{contracts.StateNotifying: Options{}.RetryBudget()},
	Build: func(ctx context.Context, env service.Env) (service.Component, error) {
		cfg := env.Config
		n, err := New(Options{DB: env.DB, AllowPrivate: cfg.WebhookAllowPrivate,
			OperatorTokens: httpx.Tokens{cfg.APIToken}, ReadTokens: httpx.Tokens{cfg.ReadToken}, Log: env.Log,
			RetentionDeliveries: cfg.RetentionDeliveries})
		if err != nil {
			return nil, err
		}
		// The step's own retry budget comes on top of the delivery budget
		// (design §4): a shorter timeout would fail a step still working.
		if t, need := cfg.StepTimeouts[contracts.StateNotifying], cfg.DeliveryBudget()+n.RetryBudget(); t <= need {
			return nil, fmt.Errorf("PRSAGA_STEP_TIMEOUT_NOTIFYING: %s must exceed %s (delivery budget + webhook retry budget)", t, need)
		}
		return n, nil
	},
}
