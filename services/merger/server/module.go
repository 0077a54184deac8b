package server

import (
	"context"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/service"
	mydb "github.com/prsaga/prsaga/services/merger/ydb"
)

// Module is the merger as a process assembles it.
var Module = service.Module{
	Name:   contracts.ServiceMerger,
	SQLite: Migrations,
	YDB:    mydb.Migrations,
	Build: func(ctx context.Context, env service.Env) (service.Component, error) {
		return New(Options{DB: env.DB, ReposDir: env.Config.ReposDir, Sync: env.Config.Durability == "sync"})
	},
}
