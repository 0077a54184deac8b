package backup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/durable"
)

// ErrTooOld is matched (errors.Is) by Restore's error when the backup is
// older than what the deployment can still redeliver and deduplicate.
var ErrTooOld = errors.New("backup too old")

// RestoreOptions of a restore.
type RestoreOptions struct {
	From     string // the backup directory
	DBDir    string // where the services' databases go
	IndexDir string // where the search index goes
	// JS resets the consumers.
	JS jetstream.JetStream
	// RetentionInbox is how long the services keep inbox entries
	// (PRSAGA_RETENTION_INBOX): a redelivered event older than that is no
	// longer recognised as applied.
	RetentionInbox time.Duration
	// Force restores a backup older than the stream or the inboxes keep,
	// with a warning.
	Force bool
	// Warn receives warnings.
	Warn io.Writer
	Now  func() time.Time
}

// Result says what a restore did.
type Result struct {
	Manifest Manifest
	// Kept is where the replaced databases and index were moved.
	Kept string `json:"kept"`
	// CarriedOver counts the rows kept from the replaced databases (the
	// merger's journal of the merges it made since the backup).
	CarriedOver int64 `json:"carried_over"`
	// Reset maps each durable consumer to the stream sequence it resumes
	// from.
	Reset map[string]uint64 `json:"reset"`
}

// Restore puts the backup in o.From back: the databases (the current
// ones, with their WAL, are moved aside into <DBDir>/pre-restore-<time>),
// the index (the current one moved to <IndexDir>.pre-restore-<time>), then
// every durable consumer is reset to resume from the position the backup
// recorded, so that every event after it is delivered again. The services
// must be stopped (the caller checks: InUse). Interrupted, it can be run
// again.
func Restore(ctx context.Context, o RestoreOptions) (Result, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Warn == nil {
		o.Warn = io.Discard
	}
	m, err := ReadManifest(o.From)
	if err != nil {
		return Result{}, err
	}
	res := Result{Manifest: m, Reset: map[string]uint64{}}
	if err := checkAge(ctx, o, m); err != nil {
		if !o.Force {
			return res, err
		}
		fmt.Fprintf(o.Warn, "warning: %v (restoring anyway: --force)\n", err)
	}
	stamp := o.Now().UTC().Format("20060102T150405Z")
	res.Kept = filepath.Join(o.DBDir, "pre-restore-"+stamp)
	for _, d := range m.Databases {
		dst := filepath.Join(o.DBDir, d.File)
		if err := restoreDB(filepath.Join(o.From, d.File), dst, res.Kept); err != nil {
			return res, fmt.Errorf("restore the %s database: %w", d.Service, err)
		}
		if len(carriedOver[d.Service]) == 0 {
			continue
		}
		old := filepath.Join(res.Kept, d.File)
		if _, err := os.Stat(old); errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(o.Warn, "warning: no %s database was replaced: its %v since the backup are lost (a PR squashed since may be squashed again)\n", d.Service, carriedOver[d.Service])
			continue
		}
		n, err := carryOver(ctx, d.Service, dst, old)
		if err != nil {
			return res, fmt.Errorf("restore the %s database: %w", d.Service, err)
		}
		res.CarriedOver += n
	}
	if m.Index != nil {
		if err := restoreIndex(filepath.Join(o.From, m.Index.Dir), o.IndexDir, o.IndexDir+".pre-restore-"+stamp); err != nil {
			return res, fmt.Errorf("restore the search index: %w", err)
		}
	}
	if err := resetConsumers(ctx, o, m, res.Reset); err != nil {
		return res, err
	}
	return res, nil
}

// checkAge refuses a backup the deployment can no longer catch up from:
// the stream has dropped events a consumer must be given again, or the
// backup is older than the stream's MaxAge or the inbox retention (a
// redelivery of an event applied before the backup would no longer be
// recognised once its inbox entry is pruned).
func checkAge(ctx context.Context, o RestoreOptions, m Manifest) error {
	s, err := o.JS.Stream(ctx, contracts.Stream)
	if err != nil {
		return fmt.Errorf("stream %s: %w", contracts.Stream, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return fmt.Errorf("stream %s: %w", contracts.Stream, err)
	}
	var errs []error
	age := o.Now().Sub(m.CreatedAt)
	if limit := info.Config.MaxAge; limit > 0 && age >= limit {
		errs = append(errs, fmt.Errorf("%w: taken %s ago, the stream keeps events %s (PRSAGA_STREAM_MAX_AGE)", ErrTooOld, age.Round(time.Second), limit))
	}
	if o.RetentionInbox > 0 && age >= o.RetentionInbox {
		errs = append(errs, fmt.Errorf("%w: taken %s ago, inbox entries are kept %s (PRSAGA_RETENTION_INBOX)", ErrTooOld, age.Round(time.Second), o.RetentionInbox))
	}
	for _, c := range m.Consumers {
		if c.ResumeFrom > info.State.LastSeq+1 {
			errs = append(errs, fmt.Errorf("consumer %s resumes from sequence %d, past the stream's last %d: the backup is of another stream (or this one was recreated)", c.Name, c.ResumeFrom, info.State.LastSeq))
		}
		if info.State.Msgs > 0 && c.ResumeFrom < info.State.FirstSeq {
			errs = append(errs, fmt.Errorf("%w: consumer %s resumes from sequence %d, the stream begins at %d: the events between are gone", ErrTooOld, c.Name, c.ResumeFrom, info.State.FirstSeq))
		}
	}
	return errors.Join(errs...)
}

// restoreDB moves the database at dst (and its -wal and -shm: a WAL left
// beside the restored file would be replayed into it) into kept, then
// puts a copy of src in its place (copied beside it, synced, renamed).
func restoreDB(src, dst, kept string) error {
	for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
		cur := dst + suffix
		if _, err := os.Lstat(cur); errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err := os.MkdirAll(kept, 0o700); err != nil {
			return err
		}
		if err := os.Rename(cur, filepath.Join(kept, filepath.Base(cur))); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	tmp := dst + ".restoring"
	if err := copyFile(src, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, dst); err != nil {
		return err
	}
	return durable.Sync(filepath.Dir(dst))
}

// restoreIndex moves the index at dst to kept and copies src in its place.
func restoreIndex(src, dst, kept string) error {
	if _, err := os.Lstat(dst); err == nil {
		if err := os.Rename(dst, kept); err != nil {
			return err
		}
	}
	tmp := dst + ".restoring"
	_ = os.RemoveAll(tmp) // left by an interrupted restore
	if err := copyDir(src, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}

// resetConsumers resets each durable consumer of the stream: one the
// backup knows to its recorded position, one created since to the
// stream's beginning (its service's restored database has applied none of
// its events; the inbox drops any the service had seen another way).
func resetConsumers(ctx context.Context, o RestoreOptions, m Manifest, reset map[string]uint64) error {
	s, err := o.JS.Stream(ctx, contracts.Stream)
	if err != nil {
		return fmt.Errorf("stream %s: %w", contracts.Stream, err)
	}
	want := map[string]uint64{}
	for _, c := range m.Consumers {
		want[c.Name] = c.ResumeFrom
	}
	live := map[string]bool{}
	lister := s.ListConsumers(ctx)
	for ci := range lister.Info() {
		if ci.Config.Durable != "" {
			live[ci.Name] = true
		}
	}
	if err := lister.Err(); err != nil {
		return fmt.Errorf("consumers of %s: %w", contracts.Stream, err)
	}
	for name := range live {
		seq, ok := want[name]
		if !ok {
			seq = 1
			fmt.Fprintf(o.Warn, "warning: consumer %s is not in the backup (created since): it starts again from the beginning of the stream\n", name)
		}
		if _, err := o.JS.ResetConsumerToSequence(ctx, contracts.Stream, name, seq); err != nil {
			return fmt.Errorf("reset consumer %s to sequence %d: %w", name, seq, err)
		}
		reset[name] = seq
	}
	for name := range want {
		if !live[name] {
			fmt.Fprintf(o.Warn, "warning: consumer %s is gone from the stream: its service creates it at start and is given the whole stream again (its inbox drops what it applied)\n", name)
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// copyDir copies the regular files and directories under src to dst.
func copyDir(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o700)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		return copyFile(path, target)
	})
}
