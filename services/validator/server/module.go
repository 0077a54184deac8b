package server

import (
	"context"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/httpx"
	"github.com/prsaga/prsaga/platform/service"
	vydb "github.com/prsaga/prsaga/services/validator/ydb"
)

// Module is the validator as a process assembles it.
var Module = service.Module{
	Name:   contracts.ServiceValidator,
	SQLite: Migrations,
	YDB:    vydb.Migrations,
	Build: func(ctx context.Context, env service.Env) (service.Component, error) {
		cfg := env.Config
		// Reads need the read token or the operator's when either is set;
		// statuses may also come with the status token (a CI system's).
		return New(Options{
			DB: env.DB, ReposDir: cfg.ReposDir,
			OperatorTokens: httpx.Tokens{cfg.APIToken},
			StatusTokens:   httpx.Tokens{cfg.StatusToken, cfg.APIToken},
			ReadTokens:     httpx.Tokens{cfg.ReadToken},
		})
	},
}
