package ledger_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/cputime"
	"github.com/prsaga/prsaga/platform/store"
	"github.com/prsaga/prsaga/services/ledger"
)

// benchEnvelopes opens the events of n clean runs, in the order the
// ledger sees them (each run's five events in a row), on distinct PRs.
func benchEnvelopes(b *testing.B, n int) []contracts.Envelope {
	b.Helper()
	out := make([]contracts.Envelope, 0, n)
	for i := 0; len(out) < n; i++ {
		for _, e := range newRun(b, fmt.Sprintf("acme/bench#%d", i+1)).happy() {
			out = append(out, env(b, e))
		}
	}
	return out[:n]
}

// BenchmarkProject is one event through the projector and its own commit
// on a real SQLite file: what the ledger's single worker pays per event
// when events do not queue up.
func BenchmarkProject(b *testing.B) {
	f := newFixture(b)
	envs := benchEnvelopes(b, b.N)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx := context.Background()
	b.ReportAllocs()
	cpu := startCPU(b)
	for i := range b.N {
		err := f.store.Update(ctx, func(tx ledger.Tx) error {
			res, err := f.proj.Project(ctx, tx, envs[i], log)
			if err == nil && res.Status != ledger.StatusApplied {
				err = fmt.Errorf("event %d: %s (%s), want applied", i, res.Status, res.Reason)
			}
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	cpu.stop(b, 1)
}

// BenchmarkProjectBatch64 is 64 events in one transaction, a savepoint
// each (sqlite.DB.UpdateEach), as the runner commits them when they queue
// up; the time is per event.
func BenchmarkProjectBatch64(b *testing.B) {
	const per = 64
	f := newFixture(b)
	envs := benchEnvelopes(b, b.N*per)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx := context.Background()
	fns := make([]func(store.Tx) error, per)
	b.ReportAllocs()
	cpu := startCPU(b)
	for i := range b.N {
		for j := range fns {
			en := envs[i*per+j]
			fns[j] = func(stx store.Tx) error {
				tx, err := f.store.Bind(stx)
				if err != nil {
					return err
				}
				res, err := f.proj.Project(ctx, tx, en, log)
				if err == nil && res.Status != ledger.StatusApplied {
					err = fmt.Errorf("event %s: %s (%s), want applied", en.Event.ID(), res.Status, res.Reason)
				}
				return err
			}
		}
		errs, err := f.db.UpdateEach(ctx, fns)
		if err == nil {
			for _, e := range errs {
				if e != nil {
					err = e
					break
				}
			}
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	cpu.stop(b, per)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*per), "ns/event")
}

// cpuMeter reports the CPU time of the timed part per event ("cpu-ns/event"),
// next to the wall time: the ledger's cost in a shared machine's terms.
type cpuMeter struct {
	at time.Duration
	ok bool
}

func startCPU(b *testing.B) cpuMeter {
	b.ResetTimer()
	at, ok := cputime.Self()
	return cpuMeter{at: at, ok: ok}
}

func (m cpuMeter) stop(b *testing.B, perOp int) {
	b.StopTimer()
	if now, ok := cputime.Self(); ok && m.ok {
		b.ReportMetric(float64((now-m.at).Nanoseconds())/float64(b.N*perOp), "cpu-ns/event")
	}
}
