package bleveindex

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/blevesearch/bleve/v2"
	bolterrors "go.etcd.io/bbolt/errors"
)

// DefaultLockTimeout is the lock timeout of Open when given zero.
const DefaultLockTimeout = 5 * time.Second

// ErrLocked is matched (errors.Is) by Open's error when another handle, in
// this process or another, holds the index for longer than the lock timeout.
var ErrLocked = errors.New("index is held by another opener")

// Index is an open search index. It is safe for concurrent use: Upsert,
// Search and Count may be called from several goroutines (bleve serialises
// writers and lets readers share a snapshot). Close it once, when no call is
// running; calls after Close return an error.
type Index struct {
	idx bleve.Index
	dir string
}

// Open opens the index in dir, or creates it (and dir) if dir holds none.
// The index's file lock is awaited at most lockTimeout (zero means
// DefaultLockTimeout); after that Open fails with ErrLocked instead of
// blocking: bleve allows one open handle per index.
func Open(dir string, lockTimeout time.Duration) (*Index, error) {
	if lockTimeout <= 0 {
		lockTimeout = DefaultLockTimeout
	}
	idx, err := openOrCreate(dir, lockTimeout)
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("open index %s: %w (waited %s): %w", dir, ErrLocked, lockTimeout, err)
	}
	if err != nil {
		return nil, fmt.Errorf("open index %s: %w", dir, err)
	}
	return &Index{idx: idx, dir: dir}, nil
}

func openOrCreate(dir string, lockTimeout time.Duration) (bleve.Index, error) {
	// bleve reads its config maps, and adds to the one given when creating:
	// a fresh map per call.
	config := func() map[string]any { return map[string]any{"bolt_timeout": lockTimeout.String()} }
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

// Close releases the index and its file lock.
func (x *Index) Close() error {
	if err := x.idx.Close(); err != nil {
		return fmt.Errorf("close index %s: %w", x.dir, err)
	}
	return nil
}

// Count returns the number of documents (merged PRs) in the index.
func (x *Index) Count() (uint64, error) {
	n, err := x.idx.DocCount()
	if err != nil {
		return 0, fmt.Errorf("count documents: %w", err)
	}
	return n, nil
}

// Doc is one merged pull request as the index holds it.
type Doc struct {
	PRID         string // the document's key, e.g. "acme/widgets#42"
	Repo         string
	PRNumber     int
	TargetBranch string
	SourceBranch string
	Title        string
	MergeSHA     string
	ChangedPaths []string
	Messages     []string // commit messages of the merged commits
	MergedAt     time.Time
}

func (d Doc) fields() map[string]any {
	f := map[string]any{
		FieldPRID:         d.PRID,
		FieldRepo:         d.Repo,
		FieldPRNumber:     float64(d.PRNumber),
		FieldTargetBranch: d.TargetBranch,
		FieldSourceBranch: d.SourceBranch,
		FieldTitle:        d.Title,
		FieldMergeSHA:     d.MergeSHA,
		FieldChangedPaths: d.ChangedPaths,
		FieldMessages:     d.Messages,
	}
	if !d.MergedAt.IsZero() {
		f[FieldMergedAt] = d.MergedAt.UTC()
	}
	return f
}

// Upsert indexes docs, each replacing the document with its PR id if there
// is one, in one batch: all or none. It is idempotent, and returns once the
// batch is persisted. Within one call, a later doc with the same PR id wins.
func (x *Index) Upsert(ctx context.Context, docs ...Doc) error {
	if len(docs) == 0 {
		return nil
	}
	b := x.idx.NewBatch()
	for i, d := range docs {
		if d.PRID == "" {
			return fmt.Errorf("upsert: document %d has no pr id", i)
		}
		if err := b.Index(d.PRID, d.fields()); err != nil {
			return fmt.Errorf("upsert %s: %w", d.PRID, err)
		}
	}
	// bleve's Batch takes no context: the last moment to give up.
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("upsert %d documents: %w", len(docs), err)
	}
	if err := x.idx.Batch(b); err != nil {
		return fmt.Errorf("upsert %d documents: %w", len(docs), err)
	}
	return nil
}
