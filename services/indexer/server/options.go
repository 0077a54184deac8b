package server

import (
	"errors"
	"log/slog"
	"time"

	"github.com/prsaga/prsaga/platform/httpx"
	"github.com/prsaga/prsaga/platform/store"
)

// Options of the indexer.
type Options struct {
	// DB is the indexer's own database (inbox and outbox only).
	DB store.DB
	// IndexDir holds the bleve index; created if missing.
	IndexDir string
	// ReposDir holds the bare repositories, <ReposDir>/<owner>/<name>.git,
	// read for the commit messages of each merge. Empty: PRs are indexed
	// without commit messages.
	ReposDir string
	// LockTimeout bounds the wait for the index's single-writer lock, at
	// start and when the index is reopened after a failed write; default 5s.
	LockTimeout time.Duration
	// WriteAttempts bounds the index writes of one event before it is
	// answered step_failed(INDEXING, index_error); default 3.
	WriteAttempts int
	// Now is the clock of emitted events; default time.Now.
	Now func() time.Time
	// Log receives the HTTP route's internal errors; default discards.
	// (Event handling logs through the runner's per-event logger.)
	Log *slog.Logger
	// ReadTokens may search (titles and commit messages of private
	// repositories too); none set: the search is open (loopback only).
	ReadTokens httpx.Tokens
}

// Validate reports every problem of the options at once.
func (o Options) Validate() error {
	var errs []error
	if o.DB == nil {
		errs = append(errs, errors.New("indexer: DB is required"))
	}
	if o.IndexDir == "" {
		errs = append(errs, errors.New("indexer: IndexDir is required"))
	}
	if o.LockTimeout < 0 {
		errs = append(errs, errors.New("indexer: LockTimeout is negative"))
	}
	if o.WriteAttempts < 0 {
		errs = append(errs, errors.New("indexer: WriteAttempts is negative"))
	}
	return errors.Join(errs...)
}
