package contracts_test

import (
	"testing"
	"time"

	"github.com/prsaga/prsaga/contracts"
)

// BenchmarkNewRequested is the cost of building one event, paid by every
// step for every answer it emits.
func BenchmarkNewRequested(b *testing.B) {
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	r := validRequest()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := contracts.NewRequested(requestID, clientSource, at, r, "forge-req-7"); err != nil {
			b.Fatal(err)
		}
	}
}
