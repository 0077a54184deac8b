package rebuild

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/prsaga/prsaga/services/indexer"
	"github.com/prsaga/prsaga/services/indexer/bleveindex"
	"github.com/prsaga/prsaga/services/indexer/gitlog"
)

// ErrLocked is matched (errors.Is) by Run's error when an indexer holds the
// live index: stop it first.
var ErrLocked = bleveindex.ErrLocked

// ErrPartial is matched (errors.Is) by Run's error when the stream no
// longer holds its first events (aged out after the stream's max age, or
// purged) and AllowPartial is not set: a rebuilt index would lack the PRs
// notified only in them, which the live index may hold.
var ErrPartial = errors.New("the stream no longer holds its first events")

// ErrExists is matched by Run's error when Out already exists.
var ErrExists = errors.New("already exists")

// DefaultBatch is the number of documents per index write.
const DefaultBatch = 256

// Options of a rebuild.
type Options struct {
	JS jetstream.JetStream
	// Dir is the live index: rebuilt in Dir+".reindex", then swapped in.
	Dir string
	// Out, when set, is where the index is built instead, and nothing is
	// swapped: the live index is neither locked nor touched (safe while an
	// indexer runs; e.g. a copy for a read replica). It must not exist.
	Out string
	// ReposDir holds the bare repositories the commit messages are read
	// from, as the indexer reads them; empty: documents without messages.
	ReposDir string
	// LockTimeout bounds the wait for the live index's lock (zero:
	// bleveindex.DefaultLockTimeout).
	LockTimeout time.Duration
	// AllowPartial rebuilds from a stream whose first events were removed.
	AllowPartial bool
	// RemoveOld removes the replaced index instead of keeping it as
	// <Dir>.old-<time>.
	RemoveOld bool
	// Batch is the number of documents per index write (0: DefaultBatch).
	Batch int
	// Progress, if set, is called after each event with the events read
	// and the number of notified events still to read.
	Progress func(read, pending uint64)
	// Log receives the indexer's warnings (e.g. a commit it cannot read);
	// nil discards them. They are counted in the summary either way.
	Log *slog.Logger
	// Now names the kept old index; default time.Now.
	Now func() time.Time
}

// Summary is what a rebuild did.
type Summary struct {
	Index     string `json:"index"`         // where the rebuilt index is now
	Old       string `json:"old,omitempty"` // where the replaced one was kept
	FirstSeq  uint64 `json:"first_seq"`     // the stream's span read
	LastSeq   uint64 `json:"last_seq"`
	Partial   bool   `json:"partial"` // the stream had lost its first events
	Events    uint64 `json:"events"`  // notified events read
	Documents uint64 `json:"documents"`
	// Skipped counts the events that gave no document, by reason (Skip*);
	// Examples holds the first few, with their stream sequence.
	Skipped  map[string]uint64 `json:"skipped"`
	Examples []string          `json:"skipped_examples,omitempty"`
	// Warnings counts the indexer's warnings by message: "indexing without
	// commit messages" is a document whose commit could not be read.
	Warnings map[string]uint64 `json:"warnings,omitempty"`
	Seconds  float64           `json:"seconds"`
	// Unreadable says why the live index could not be locked, when it was
	// corrupt; it was replaced all the same.
	Unreadable string `json:"unreadable,omitempty"`
}

// SkippedTotal is the number of events skipped.
func (s Summary) SkippedTotal() uint64 {
	var n uint64
	for _, c := range s.Skipped {
		n += c
	}
	return n
}

const maxExamples = 10

// Run rebuilds the index. Every notified event of stream PRSAGA up to its
// last sequence at the start is read in order and turned into the
// indexer's document; a later event of a PR replaces its earlier document,
// as it does in the indexer. An event that fails the checks the indexer's
// consumer makes is skipped and counted. Any failure to write the new
// index fails the rebuild and leaves the live index as it was.
func Run(ctx context.Context, o Options) (sum Summary, err error) {
	start := time.Now()
	defer func() { sum.Seconds = time.Since(start).Seconds() }()
	sum.Skipped = map[string]uint64{}
	if o.Dir == "" && o.Out == "" {
		return sum, errors.New("rebuild: no index directory")
	}
	if o.Batch <= 0 {
		o.Batch = DefaultBatch
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	warnings := &counter{next: o.Log}
	x := &indexer.Indexer{}
	if o.ReposDir != "" {
		h, err := gitlog.New(o.ReposDir)
		if err != nil {
			return sum, err
		}
		x.History = h
	}

	build := o.Out
	if o.Out != "" {
		if _, err := os.Stat(o.Out); !errors.Is(err, fs.ErrNotExist) {
			return sum, fmt.Errorf("rebuild: --out %s: %w", o.Out, errors.Join(ErrExists, err))
		}
	} else {
		release, err := bleveindex.Hold(o.Dir, o.LockTimeout)
		if errors.Is(err, ErrLocked) {
			return sum, err
		}
		if err != nil {
			// The live index is unreadable (corrupt): nobody holds its lock
			// — bolt locks the file before reading it — and an indexer
			// starting cannot open it either. It is what a rebuild is for.
			sum.Unreadable = err.Error()
			release = func() error { return nil }
		}
		defer func() {
			if rerr := release(); err == nil && rerr != nil {
				err = fmt.Errorf("release the old index's lock: %w", rerr)
			}
		}()
		// Holding the live index's lock, no other rebuild runs: what is
		// there is left by one that crashed.
		build = filepath.Clean(o.Dir) + ".reindex"
		if err := os.RemoveAll(build); err != nil {
			return sum, err
		}
	}

	sp, err := streamSpan(ctx, o.JS)
	if err != nil {
		return sum, err
	}
	sum.FirstSeq, sum.LastSeq = sp.first, sp.last
	sum.Partial = sp.first > 1
	if sum.Partial && !o.AllowPartial {
		return sum, fmt.Errorf("%w (it begins at sequence %d)", ErrPartial, sp.first)
	}

	idx, err := bleveindex.Open(build, o.LockTimeout)
	if err != nil {
		return sum, err
	}
	done := false
	defer func() {
		if !done {
			_ = idx.Close()
			_ = os.RemoveAll(build) // never a half index left behind
		}
	}()
	log := slog.New(warnings)
	var batch []indexer.Doc
	flush := func() error {
		if err := idx.Upsert(ctx, batch...); err != nil {
			return fmt.Errorf("write the new index: %w", err)
		}
		batch = batch[:0]
		return nil
	}
	err = each(ctx, o.JS, sp, func(m jetstream.Msg, pending uint64) error {
		sum.Events++
		if o.Progress != nil {
			defer o.Progress(sum.Events, pending)
		}
		env, err := open(m)
		if s, ok := asSkipped(err); ok {
			sum.Skipped[s.reason]++
			if len(sum.Examples) < maxExamples {
				md, _ := m.Metadata()
				var seq uint64
				if md != nil {
					seq = md.Sequence.Stream
				}
				sum.Examples = append(sum.Examples, fmt.Sprintf("seq %d: %s", seq, clip(s.Error())))
			}
			return nil
		}
		doc, ok := x.Document(ctx, env, log.With("pr_id", env.Req().PRID))
		if !ok {
			sum.Skipped[SkipNotNotified]++
			return nil
		}
		batch = append(batch, doc)
		if len(batch) >= o.Batch {
			return flush()
		}
		return nil
	})
	if err == nil && len(batch) > 0 {
		err = flush()
	}
	if err != nil {
		return sum, err
	}
	if sum.Documents, err = idx.Count(); err != nil {
		return sum, err
	}
	sum.Warnings = warnings.counts()
	if err := idx.Close(); err != nil {
		return sum, err
	}
	done = true
	if o.Out != "" {
		sum.Index = o.Out
		return sum, nil
	}
	old := fmt.Sprintf("%s.old-%s", filepath.Clean(o.Dir), o.Now().UTC().Format("20060102T150405.000Z"))
	if err := swap(o.Dir, build, old); err != nil {
		_ = os.RemoveAll(build)
		return sum, err
	}
	sum.Index = o.Dir
	if o.RemoveOld {
		if err := os.RemoveAll(old); err != nil {
			return sum, fmt.Errorf("rebuilt and swapped in, but the old index %s could not be removed: %w", old, err)
		}
	} else {
		sum.Old = old
	}
	return sum, nil
}

// clip keeps an example short: the first 200 bytes.
func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// counter is a slog handler that counts warnings by message and passes
// every record on to next, if any. Handlers derived by WithAttrs count in
// their root.
type counter struct {
	next  *slog.Logger
	attrs []slog.Attr
	root  *counter

	mu sync.Mutex
	n  map[string]uint64
}

func (c *counter) Enabled(context.Context, slog.Level) bool { return true }

func (c *counter) Handle(ctx context.Context, r slog.Record) error {
	root := c.root
	if root == nil {
		root = c
	}
	if r.Level >= slog.LevelWarn {
		root.mu.Lock()
		if root.n == nil {
			root.n = map[string]uint64{}
		}
		root.n[r.Message]++
		root.mu.Unlock()
	}
	if root.next != nil && root.next.Enabled(ctx, r.Level) {
		r.AddAttrs(c.attrs...)
		return root.next.Handler().Handle(ctx, r)
	}
	return nil
}

func (c *counter) WithAttrs(as []slog.Attr) slog.Handler {
	root := c.root
	if root == nil {
		root = c
	}
	return &counter{root: root, attrs: append(append([]slog.Attr(nil), c.attrs...), as...)}
}

func (c *counter) WithGroup(string) slog.Handler { return c }

func (c *counter) counts() map[string]uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.n) == 0 {
		return nil
	}
	return maps.Clone(c.n)
}
