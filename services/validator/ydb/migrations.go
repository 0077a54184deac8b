package ydb

import (
	"embed"

	pydb "github.com/prsaga/prsaga/platform/ydb"
)

//go:embed migrations/*.yql
var migrationFiles embed.FS

// Migrations are the validator's tables, applied by pydb.Open.
var Migrations = pydb.EmbeddedMigrations("validator", migrationFiles, "migrations")
