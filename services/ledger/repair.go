package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/prsaga/prsaga/contracts"
)

// Repairer rewrites one PR's row and history as the log re-derived them,
// with an audit record, in one transaction (design §5 "Verify and
// repair"). Only safe while no ledger writes the store.
type Repairer interface {
	Repair(ctx context.Context, c SagaCheck, a RepairAudit) error
}

// RepairAudit is what the audit record of a repair says besides the
// rows: who ran it, when, and why.
type RepairAudit struct {
	Actor  string
	At     time.Time
	Reason string
}

// AuditedSaga is a row and its history as the audit record keeps them
// (JSON in saga_repair.before / after); Row is null when there is none.
type AuditedSaga struct {
	Row         *Saga        `json:"row"`
	Transitions []Transition `json:"transitions"`
}

// AuditJSON encodes a row and its history for the audit record.
func AuditJSON(r contracts.Row, ts []Transition) (string, error) {
	a := AuditedSaga{Transitions: ts}
	if a.Transitions == nil {
		a.Transitions = []Transition{}
	}
	if r.Exists {
		s := SagaOf(r)
		a.Row = &s
	}
	b, err := json.Marshal(a)
	if err != nil {
		return "", fmt.Errorf("encode audit of %s: %w", r.PRID, err)
	}
	return string(b), nil
}
