package bleveindex

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/blevesearch/bleve/v2"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/prsaga/prsaga/services/indexer"
)

// DefaultLockTimeout is the lock timeout of Open when given zero.
const DefaultLockTimeout = 5 * time.Second

// ErrLocked is matched (errors.Is) by Open's error when another handle, in
// this process or another, holds the index for longer than the lock timeout.
var ErrLocked = errors.New("index is held by another opener")

// ErrNotOpen is matched (errors.Is) by calls made while the index is not
// open: a Reopen failed, and the error says why.
var ErrNotOpen = errors.New("index is not open")

// Doc is one merged pull request; see indexer.Doc.
type Doc = indexer.Doc

var _ indexer.Index = (*Index)(nil)

// Index is an open search index. It is safe for concurrent use: Upsert,
// Search and Count may be called from several goroutines (bleve serialises
// writers and lets readers share a snapshot); Reopen waits for the calls in
// progress. After Close every call fails with an error matching
// indexer.ErrClosed.
type Index struct {
	dir         string
	lockTimeout time.Duration

	mu     sync.RWMutex
	idx    bleve.Index // nil while not open
	err    error       // why idx is nil
	closed bool
	writer *writerLock // held by the index's writer (writer.go); nil for Open's and a standby
}

// Open opens the index in dir, or creates it (and dir) if dir holds none.
// The index's file lock is awaited at most lockTimeout (zero means
// DefaultLockTimeout); after that Open fails with ErrLocked instead of
// blocking: bleve allows one open handle per index.
func Open(dir string, lockTimeout time.Duration) (*Index, error) {
	if lockTimeout <= 0 {
		lockTimeout = DefaultLockTimeout
	}
	idx, err := open(dir, lockTimeout)
	if err != nil {
		return nil, err
	}
	return &Index{idx: idx, dir: dir, lockTimeout: lockTimeout}, nil
}

func open(dir string, lockTimeout time.Duration) (bleve.Index, error) {
	idx, err := openOrCreate(dir, lockTimeout)
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("open index %s: %w (waited %s): %w", dir, ErrLocked, lockTimeout, err)
	}
	if err != nil {
		return nil, fmt.Errorf("open index %s: %w", dir, err)
	}
	return idx, nil
}

func openOrCreate(dir string, lockTimeout time.Duration) (bleve.Index, error) {
	// bleve reads its config maps, and adds to the one given when creating:
	// a fresh map per call.
	config := func() map[string]any {
		return map[string]any{"bolt_timeout": lockTimeout.String(), "scorchMergePlanOptions": mergePlan()}
	}
	// index_meta.json is what bleve writes first when it creates an index;
	// a missing or empty dir (a fresh volume) has none.
	_, err := os.Stat(filepath.Join(dir, "index_meta.json"))
	if err == nil {
		return bleve.OpenUsing(dir, config())
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	m, err := newMapping()
	if err != nil {
		return nil, err
	}
	idx, err := bleve.NewUsing(dir, m, bleve.Config.DefaultIndexType, bleve.Config.DefaultKVStore, config())
	if errors.Is(err, bleve.ErrorIndexPathExists) {
		// Another opener created it since the Stat: open theirs.
		return bleve.OpenUsing(dir, config())
	}
	return idx, err
}

// Close releases the index and its file lock. Later calls fail with
// indexer.ErrClosed; closing twice is harmless.
func (x *Index) Close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return nil
	}
	x.closed = true
	idx, w := x.idx, x.writer
	x.idx, x.err, x.writer = nil, indexer.ErrClosed, nil
	defer w.release() // after bleve's own lock: a standby then opens a closed index
	if idx == nil {
		return nil
	}
	if err := idx.Close(); err != nil {
		return fmt.Errorf("close index %s: %w", x.dir, err)
	}
	return nil
}

// Reopen closes the handle and opens the index again (waiting at most the
// lock timeout of Open). On failure the index stays closed until a later
// Reopen succeeds: calls fail with ErrNotOpen and Ready reports why.
func (x *Index) Reopen() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return fmt.Errorf("reopen index %s: %w", x.dir, indexer.ErrClosed)
	}
	if x.idx == nil && errors.Is(x.err, ErrStandby) {
		return fmt.Errorf("reopen index %s: %w", x.dir, x.err) // a standby opens nothing: Activate does
	}
	if x.idx != nil {
		// A broken handle may fail to close; the lock goes with it anyway.
		_ = x.idx.Close()
		x.idx = nil
	}
	idx, err := open(x.dir, x.lockTimeout)
	if err != nil {
		x.err = err
		return err
	}
	x.idx, x.err = idx, nil
	return nil
}

// Ready reports whether the index is open and answers: nil, or why not —
// for a standby, an error matching ErrStandby saying who holds the index.
func (x *Index) Ready() error {
	x.mu.RLock()
	standby := x.idx == nil && !x.closed && errors.Is(x.err, ErrStandby)
	err := x.err
	x.mu.RUnlock()
	if standby {
		return err
	}
	_, err = x.Count()
	return err
}

// use runs f with the open handle, holding the read lock.
func (x *Index) use(f func(bleve.Index) error) error {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.idx == nil {
		if x.closed {
			return fmt.Errorf("index %s: %w", x.dir, indexer.ErrClosed)
		}
		return fmt.Errorf("index %s: %w: %w", x.dir, ErrNotOpen, x.err)
	}
	return f(x.idx)
}

// Count returns the number of documents (merged PRs) in the index.
func (x *Index) Count() (uint64, error) {
	var n uint64
	err := x.use(func(idx bleve.Index) error {
		var err error
		if n, err = idx.DocCount(); err != nil {
			return fmt.Errorf("count documents: %w", err)
		}
		return nil
	})
	return n, err
}

func fields(d Doc) map[string]any {
	f := map[string]any{
		FieldPRID:         d.PRID,
		FieldRepo:         d.Repo,
		FieldPRNumber:     float64(d.PRNumber),
		FieldTargetBranch: d.TargetBranch,
		FieldSourceBranch: d.SourceBranch,
		FieldTitle:        d.Title,
		FieldRequestedBy:  d.RequestedBy,
		FieldMergeSHA:     d.MergeSHA,
		FieldChangedPaths: d.ChangedPaths,
		FieldFiles:        files(d.ChangedPaths),
		FieldMessages:     d.Messages,
	}
	if !d.MergedAt.IsZero() {
		f[FieldMergedAt] = d.MergedAt.UTC()
	}
	return f
}

// files lists each changed path and, for a path in a directory, its file
// name: what the files field holds, each kept whole.
func files(paths []string) []string {
	out := make([]string, 0, 2*len(paths))
	for _, p := range paths {
		out = append(out, p)
		if i := strings.LastIndexByte(p, '/'); i >= 0 && i < len(p)-1 {
			out = append(out, p[i+1:])
		}
	}
	return out
}

// Upsert indexes docs, each replacing the document with its PR id if there
// is one, in one batch: all or none. It is idempotent, and returns once the
// batch is persisted. Within one call, a later doc with the same PR id wins.
func (x *Index) Upsert(ctx context.Context, docs ...Doc) error {
	if len(docs) == 0 {
		return nil
	}
	return x.use(func(idx bleve.Index) error {
		b := idx.NewBatch()
		for i, d := range docs {
			if d.PRID == "" {
				return fmt.Errorf("upsert: document %d has no pr id", i)
			}
			if err := b.Index(d.PRID, fields(d)); err != nil {
				return fmt.Errorf("upsert %s: %w", d.PRID, err)
			}
		}
		// bleve's Batch takes no context: the last moment to give up.
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("upsert %d documents: %w", len(docs), err)
		}
		if err := idx.Batch(b); err != nil {
			return fmt.Errorf("upsert %d documents: %w", len(docs), err)
		}
		return nil
	})
}

// mergePlan is scorch's merge policy: mergeplan.MergePlanOptions fields
// over its defaults (tiers of 10 segments growing tenfold, 10 segments per
// merge). Its default floor, 2,000 documents, counts every smaller segment
// as 2,000: below 20,000 documents it then wants one segment per 2,000, so
// each new segment — one per write, of one to 64 documents — is merged
// into the big one, rewriting the whole index again and again (27–41% of
// all CPU of a bench run). With a floor of 10 the tiers start at 10
// documents: each document is rewritten about once per tier (log10 of the
// index size over 10), and a search reads at most about 10 segments per
// tier (about 20 for 4,000 documents). BenchmarkIndexBatch64 / Batch8:
// a half to a third of the default's CPU per document; a floor of 100 did
// as well at 64 documents per write and 10–30% worse at 2–8, the
// indexer's usual batches in W2.
//
// The persister keeps its defaults: a write returns only once persisted
// (no unsafe_batch: the index write is the step's side effect, done before
// the commit, and a redelivery after a crash relies on it), so a persister
// nap (PersisterNapTimeMSec) would only delay every answer; writes that
// arrive while it persists are merged in memory into one file anyway.
func mergePlan() map[string]any {
	return map[string]any{"FloorSegmentSize": 10}
}
