package sqlite

import (
	"embed"

	psqlite "github.com/prsaga/prsaga/platform/sqlite"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations are the validator's tables, applied by psqlite.Open.
var Migrations = psqlite.EmbeddedMigrations("validator", migrationFiles, "migrations")
