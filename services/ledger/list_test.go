package ledger_test

import (
	"errors"
	"testing"
	"time"

	"github.com/prsaga/prsaga/services/ledger"
)

// A cursor that is not one the list wrote is refused; one it wrote reads
// back as it was.
func TestParseCursor(t *testing.T) {
	for _, c := range []string{"", "!!", "e30", ledger.Cursor{PRID: "nope"}.String()} {
		if _, err := ledger.ParseCursor(c); !errors.Is(err, ledger.ErrBadCursor) {
			t.Errorf("ParseCursor(%q): err = %v, want ErrBadCursor", c, err)
		}
	}
	c := ledger.Cursor{UpdatedAt: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), PRID: "acme/widgets#7"}
	if got, err := ledger.ParseCursor(c.String()); err != nil || got != c {
		t.Errorf("cursor round trip: %+v, %v; want %+v", got, err, c)
	}
}
