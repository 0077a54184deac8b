package ledger

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/prsaga/prsaga/contracts"
)

// Limits of a list page.
const (
	DefaultLimit = 50
	MaxLimit     = 500
)

// Filter selects sagas to list. Lists are ordered by updated_at, most
// recent first, ties broken by pr_id (descending): a total order, so a
// cursor names an exact position. A saga updated while a client pages moves
// to the front and is not seen again by that walk; none is listed twice.
type Filter struct {
	State contracts.State // "" = any
	Repo  string          // "" = any
	// Stuck keeps only the rows the watchdog's next tick would move: in
	// flight and last updated before StuckBefore[state] (Timeouts.Cutoffs).
	Stuck       bool
	StuckBefore map[contracts.State]time.Time
	Limit       int     // 0 = DefaultLimit; capped at MaxLimit
	After       *Cursor // nil = from the start
}

// WithDefaults applies the default and the cap on Limit.
func (f Filter) WithDefaults() Filter {
	switch {
	case f.Limit <= 0:
		f.Limit = DefaultLimit
	case f.Limit > MaxLimit:
		f.Limit = MaxLimit
	}
	return f
}

// Validate checks the filter's ids, before they reach a query.
func (f Filter) Validate() error {
	var errs []error
	if f.State != "" {
		if _, err := contracts.ParseState(string(f.State)); err != nil {
			errs = append(errs, err)
		}
	}
	if f.Repo != "" {
		errs = append(errs, contracts.ValidateRepo(f.Repo))
	}
	if f.Stuck && len(f.StuckBefore) == 0 {
		errs = append(errs, errors.New("stuck filter without the watchdog's cutoffs"))
	}
	if f.After != nil {
		if _, _, err := contracts.ParsePRID(f.After.PRID); err != nil {
			errs = append(errs, fmt.Errorf("cursor: %w", err))
		}
	}
	return errors.Join(errs...)
}

// Page is one page of a list; NextCursor is "" on the last page.
type Page struct {
	Sagas      []Saga `json:"sagas"`
	NextCursor string `json:"next_cursor"`
}

// Cursor is the position after the last saga of a page.
type Cursor struct {
	UpdatedAt time.Time
	PRID      string
}

type cursorJSON struct {
	U int64  `json:"u"` // updated_at, Unix microseconds
	P string `json:"p"`
}

// CursorAfter is the cursor that continues after s.
func CursorAfter(s Saga) Cursor { return Cursor{UpdatedAt: s.UpdatedAt, PRID: s.PRID} }

// String encodes the cursor opaquely (base64url JSON).
func (c Cursor) String() string {
	b, _ := json.Marshal(cursorJSON{U: c.UpdatedAt.UnixMicro(), P: c.PRID})
	return base64.RawURLEncoding.EncodeToString(b)
}

// ErrBadCursor: a cursor that no page handed out.
var ErrBadCursor = errors.New("cursor is not one this API handed out")

// ParseCursor decodes and validates a cursor from String.
func ParseCursor(s string) (Cursor, error) {
	if len(s) > 1024 {
		return Cursor{}, ErrBadCursor
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return Cursor{}, ErrBadCursor
	}
	var c cursorJSON
	if err := json.Unmarshal(b, &c); err != nil || c.U < 0 {
		return Cursor{}, ErrBadCursor
	}
	if _, _, err := contracts.ParsePRID(c.P); err != nil {
		return Cursor{}, ErrBadCursor
	}
	return Cursor{UpdatedAt: time.UnixMicro(c.U).UTC(), PRID: c.P}, nil
}
