package server

import (
	"context"
	"path/filepath"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/service"
)

// Module is the indexer as a process assembles it. Its store holds only
// the inbox and outbox; the search index is a directory of its own.
var Module = service.Module{
	Name: contracts.ServiceIndexer,
	Build: func(ctx context.Context, env service.Env) (service.Component, error) {
		cfg := env.Config
		ix, err := New(Options{DB: env.DB, IndexDir: filepath.Join(cfg.DataDir, "index"), ReposDir: cfg.ReposDir, Log: env.Log,
			ReadTokens: cfg.ReadTokens()})
		if err != nil {
			return nil, err
		}
		env.OnClose(ix.Close)
		return ix, nil
	},
}
