package validator

import (
	"context"
	"time"

	"github.com/prsaga/prsaga/platform/store"
)

// Validator answers merge requests (OnMergeRequested), keeps the PR locks
// (OnLockEvent) and records the statuses and protection the decision reads.
// Fill every field before use; it is then safe for concurrent use.
type Validator struct {
	// DB is the service's database: its tables (through Store), inbox and
	// outbox.
	DB store.DB
	// Store is the validator's tables on DB's store.
	Store Store
	// Heads reads the branch heads of the repositories.
	Heads Heads
	// Required are the contexts required on a target branch without
	// configured protection.
	Required []string
	// Now is the clock of emitted events and stored statuses.
	Now func() time.Time
}

// Update runs f on the validator's tables in one write transaction of its
// own; f may run more than once (see store.Tx).
func (v *Validator) Update(ctx context.Context, f func(tx Tx) error) error {
	return v.DB.Update(ctx, func(stx store.Tx) error {
		tx, err := v.Store.Bind(stx)
		if err != nil {
			return err
		}
		return f(tx)
	})
}

// SetStatus records st, stamped now, as the latest status of its context on
// repo@sha and returns it as stored. The stamp is cut to microseconds, what
// both stores keep, so that the answer equals what a later read returns.
func (v *Validator) SetStatus(ctx context.Context, repo, sha string, st Status) (Status, error) {
	st.UpdatedAt = v.Now().UTC().Truncate(time.Microsecond)
	err := v.Update(ctx, func(tx Tx) error { return tx.PutStatus(repo, sha, st) })
	return st, err
}

// Statuses returns the latest status of every context of repo@sha.
func (v *Validator) Statuses(ctx context.Context, repo, sha string) ([]Status, error) {
	return v.Store.Statuses(ctx, repo, sha)
}

// SetProtection replaces the required contexts of repo's branch.
func (v *Validator) SetProtection(ctx context.Context, repo, branch string, contexts []string) error {
	return v.Update(ctx, func(tx Tx) error { return tx.PutProtection(repo, branch, contexts) })
}

// Protection returns the required contexts of repo's branch; ok is false
// when none are configured.
func (v *Validator) Protection(ctx context.Context, repo, branch string) ([]string, bool, error) {
	return v.Store.Protection(ctx, repo, branch)
}
