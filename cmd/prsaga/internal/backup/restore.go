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
	"github.com/prsaga/prsaga/platform/fault"
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
	// Kept is where this run moved the databases it replaced.
	Kept string `json:"kept"`
	// KeptIndex is where this run moved the index it replaced ("" when
	// there was none to move).
	KeptIndex string `json:"kept_index,omitempty"`
	// CarriedOver counts the rows added to the restored databases from
	// the ones replaced, by this run and every earlier restore (the
	// merger's journal of the merges made since the backup).
	CarriedOver int64 `json:"carried_over"`
	// Reset maps each durable consumer to the stream sequence it resumes
	// from.
	Reset map[string]uint64 `json:"reset"`
}

// The restore's fault points (package fault, PRSAGA_FAULTS): a test kills
// a restore at each boundary between its steps and runs it again. Each
// database passes the first three, in the order of the manifest.
const (
	FaultDBMoved      = "restore.db-moved"      // a database moved aside, the backup's not copied in
	FaultDBCopied     = "restore.db-copied"     // the backup's copy in place, nothing carried over
	FaultDBCarried    = "restore.db-carried"    // the database done
	FaultIndexMoved   = "restore.index-moved"   // the index moved aside, the backup's not copied in
	FaultIndexCopied  = "restore.index-copied"  // the index done
	FaultConsumerDone = "restore.consumer-done" // one durable consumer reset
)

// Restore puts the backup in o.From back: each database (the current one
// moved aside into a new kept directory <DBDir>/pre-restore-<time>-<n>,
// the backup's copied in, then the rows of carriedOver tables of every
// kept directory there is added), the index (the current one moved to
// <IndexDir>.pre-restore-<time>-<n>), then every durable consumer is reset
// to resume from the position the backup recorded, so that every event
// after it is delivered again. The services must be stopped (the caller
// checks: InUse).
//
// Killed at any point, it can be run again, and that run's result is the
// one a run never interrupted gives: each step puts the backup's file in
// place whatever the previous run left (a copy it already put there is
// moved aside again, which loses nothing), the carried-over rows are read
// from the kept directories of every run, this one's and earlier ones',
// and a reset consumer is reset again to the same position. No run moves
// a file over another: each has a kept directory of its own.
func Restore(ctx context.Context, o RestoreOptions) (Result, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Warn == nil {
		o.Warn = io.Discard
	}
	fault.Register(FaultDBMoved, FaultDBCopied, FaultDBCarried, FaultIndexMoved, FaultIndexCopied, FaultConsumerDone)
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
	now := o.Now()
	kept, name, err := reserveKept(o.DBDir, now)
	if err != nil {
		return res, fmt.Errorf("make a directory for the replaced databases: %w", err)
	}
	res.Kept = kept
	for _, d := range m.Databases {
		n, err := restoreDB(ctx, filepath.Join(o.From, d.File), filepath.Join(o.DBDir, d.File), kept, d.Service, o.Warn)
		if err != nil {
			return res, fmt.Errorf("restore the %s database: %w", d.Service, err)
		}
		res.CarriedOver += n
		if err := fault.Hit(FaultDBCarried); err != nil {
			return res, err
		}
	}
	if m.Index != nil {
		if res.KeptIndex, err = restoreIndex(filepath.Join(o.From, m.Index.Dir), o.IndexDir, o.IndexDir+"."+name); err != nil {
			return res, fmt.Errorf("restore the search index: %w", err)
		}
		if err := fault.Hit(FaultIndexCopied); err != nil {
			return res, err
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

// restoreDB moves the database at dst aside into kept (moveAside), puts a
// copy of src in its place (copied beside it, synced, renamed), then adds
// the rows of service's carriedOver tables from the database replaced by
// this run and by every earlier restore (carryOverAll). It returns how
// many rows were added.
func restoreDB(ctx context.Context, src, dst, kept, service string, warn io.Writer) (int64, error) {
	if _, err := moveAside(ctx, dst, kept, warn); err != nil {
		return 0, err
	}
	if err := fault.Hit(FaultDBMoved); err != nil {
		return 0, err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return 0, err
	}
	tmp := dst + ".restoring"
	if err := copyFile(src, tmp); err != nil {
		return 0, err
	}
	if err := os.Rename(tmp, dst); err != nil {
		return 0, err
	}
	if err := durable.Sync(filepath.Dir(dst)); err != nil {
		return 0, err
	}
	if err := fault.Hit(FaultDBCopied); err != nil {
		return 0, err
	}
	return carryOverAll(ctx, service, dst, warn)
}

// restoreIndex moves the index at dst aside, to kept or, when a kept
// index of that name exists, to kept-<n> (renaming a directory never
// replaces a non-empty one, and the name is checked first), then copies
// src in its place. It returns where the replaced index went ("" when
// there was none).
func restoreIndex(src, dst, kept string) (string, error) {
	moved := ""
	if _, err := os.Lstat(dst); err == nil {
		to := kept
		for n := 2; ; n++ {
			if _, err := os.Lstat(to); errors.Is(err, os.ErrNotExist) {
				break
			}
			to = fmt.Sprintf("%s-%d", kept, n)
		}
		if err := os.Rename(dst, to); err != nil {
			return "", err
		}
		moved = to
	}
	if err := fault.Hit(FaultIndexMoved); err != nil {
		return moved, err
	}
	tmp := dst + ".restoring"
	_ = os.RemoveAll(tmp) // left by an interrupted restore
	if err := copyDir(src, tmp); err != nil {
		return moved, err
	}
	if err := os.Rename(tmp, dst); err != nil {
		return moved, err
	}
	return moved, durable.Sync(filepath.Dir(dst))
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
		if err := fault.Hit(FaultConsumerDone); err != nil {
			return err
		}
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
