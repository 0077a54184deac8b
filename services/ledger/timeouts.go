package ledger

import (
	"errors"
	"fmt"
	"time"

	"github.com/prsaga/prsaga/contracts"
)

// Defaults of the watchdog (design §4).
const (
	DefaultWatchdogInterval = 5 * time.Second
	DefaultWatchdogBatch    = 100
	DefaultStepTimeout      = 2 * time.Minute
)

// Timeouts are the watchdog's step timeouts: how long a row may stay in
// each in-flight state before the watchdog fails it.
type Timeouts map[contracts.State]time.Duration

// Of returns the timeout of an in-flight state (DefaultStepTimeout when
// none is configured).
func (t Timeouts) Of(s contracts.State) time.Duration {
	if d, ok := t[s]; ok && d > 0 {
		return d
	}
	return DefaultStepTimeout
}

// Cutoffs are, per in-flight state, the updated_at before which a row is
// stuck at now. The watchdog and the API's stuck filter both use them, so
// that "stuck" means exactly "the next tick moves it".
func (t Timeouts) Cutoffs(now time.Time) map[contracts.State]time.Time {
	out := make(map[contracts.State]time.Time, len(contracts.Steps))
	for _, s := range contracts.Steps {
		out[s] = now.Add(-t.Of(s))
	}
	return out
}

// Stuck reports whether a saga is stuck at now.
func (t Timeouts) Stuck(s Saga, now time.Time) bool {
	return s.State.InFlight() && s.UpdatedAt.Before(now.Add(-t.Of(s.State)))
}

// WatchdogConfig configures the watchdog.
type WatchdogConfig struct {
	Interval time.Duration // PRSAGA_WATCHDOG_INTERVAL; 0 = DefaultWatchdogInterval
	Batch    int           // PRSAGA_WATCHDOG_BATCH; 0 = DefaultWatchdogBatch
	Timeouts Timeouts      // PRSAGA_STEP_TIMEOUT[_<STATE>]
	// DeliveryBudget is how long JetStream may keep redelivering a step's
	// trigger: AckWait × MaxDeliver + the backoff total.
	DeliveryBudget time.Duration
	// StepBudgets is each step's own retry budget within one delivery (the
	// notifier's webhook attempts, for one).
	StepBudgets map[contracts.State]time.Duration
}

// WithDefaults fills the zero fields.
func (c WatchdogConfig) WithDefaults() WatchdogConfig {
	if c.Interval == 0 {
		c.Interval = DefaultWatchdogInterval
	}
	if c.Batch == 0 {
		c.Batch = DefaultWatchdogBatch
	}
	return c
}

// Validate checks the configuration at start: a step timed out while its
// service is still allowed to retry would fail sagas that are about to
// succeed. Every problem is reported.
func (c WatchdogConfig) Validate() error {
	var errs []error
	if c.Interval <= 0 {
		errs = append(errs, fmt.Errorf("watchdog interval %s must be positive", c.Interval))
	}
	if c.Batch < 1 {
		errs = append(errs, fmt.Errorf("watchdog batch %d must be at least 1", c.Batch))
	}
	for _, s := range contracts.Steps {
		budget := c.DeliveryBudget + c.StepBudgets[s]
		if t := c.Timeouts.Of(s); t <= budget {
			errs = append(errs, fmt.Errorf("step timeout of %s (%s) must exceed its delivery budget %s "+
				"(ack wait × max deliver + backoff %s, plus the step's own retries %s)", s, t, budget, c.DeliveryBudget, c.StepBudgets[s]))
		}
	}
	return errors.Join(errs...)
}
