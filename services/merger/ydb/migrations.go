package ydb

import (
	"embed"

	pydb "github.com/prsaga/prsaga/platform/ydb"
)

//go:embed migrations/*.yql
var migrationFiles embed.FS

// Migrations are the merger's tables, applied by pydb.Open.
var Migrations = pydb.EmbeddedMigrations("merger", migrationFiles, "migrations")
