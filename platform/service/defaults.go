package service

import (
	"log/slog"
	"time"
)

// The defaults every service's Options share, so that a zero field means
// the same in each.

// Clock is now, or time.Now when now is nil.
func Clock(now func() time.Time) func() time.Time {
	if now == nil {
		return time.Now
	}
	return now
}

// Logger is log, or a logger that discards when log is nil.
func Logger(log *slog.Logger) *slog.Logger {
	if log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return log
}
