package service_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/prsaga/prsaga/platform/service"
)

func TestDefaultsKeepWhatIsSet(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	if got := service.Clock(func() time.Time { return at })(); !got.Equal(at) {
		t.Errorf("Clock(set)() = %v, want %v", got, at)
	}
	if got := service.Clock(nil)(); time.Since(got) > time.Minute || time.Since(got) < -time.Minute {
		t.Errorf("Clock(nil)() = %v, want about now", got)
	}
	log := slog.New(slog.DiscardHandler)
	if service.Logger(log) != log {
		t.Error("Logger(set) is not the logger set")
	}
	if service.Logger(nil) == nil {
		t.Error("Logger(nil) is nil")
	}
}
