package engine

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// The merge of one regular file both sides changed, as merge-ort's
// handle_content_merge does it: modes first, then the contents — taken
// whole when only one side changed them, else merged line by line.

// Limits of the line merge; beyond them the file is a conflict (git would
// merge it: these are refusals, never different results). They bound the
// memory of a merge and the time of its diffs.
const (
	// maxLineMergeSize is the largest blob merged line by line: three
	// texts, their lines and their diffs are held in memory at once.
	maxLineMergeSize = 8 << 20
	// maxLineMergeDiff bounds the lines a diff has to align: the lines of
	// base and side left after their common beginning and end. The
	// histogram diff's time grows with the lines of a region times the
	// occurrences (at most 64) of its repeated lines, and can approach
	// quadratic when the match it keeps is small each time; the bound keeps
	// such a merge within seconds (BenchmarkLineMergeWorst). A large file
	// changed at its start and its end is therefore not merged line by
	// line.
	maxLineMergeDiff = 50000
	// binaryProbe is how much of a blob git searches for a NUL byte to
	// call it binary (xdiff-interface.c, FIRST_FEW_BYTES).
	binaryProbe = 8000
)

// mergeFile merges three versions of a regular file (base b, ours o,
// theirs t; modes 100644 or 100755 only), the two sides changed
// differently. A file that cannot be merged is recorded as a conflict and
// the zero entry returned.
func (m *treeMerge) mergeFile(p string, b, o, t entry) (entry, error) {
	if err := canceled(m.ctx, p); err != nil {
		return entry{}, err
	}
	return m.mergeContents(p, "", b, o, t)
}

// mergeContents merges the modes, then the contents, of a file at path p,
// whose attributes decide how; a conflict is recorded at p, its reason
// followed by note.
func (m *treeMerge) mergeContents(p, note string, b, o, t entry) (entry, error) {
	mode, ok := mergeModes(b.mode, o.mode, t.mode)
	if !ok {
		m.conflict(p, "file mode changed differently on both sides"+note)
		return entry{}, nil
	}
	switch {
	case o.hash == t.hash || o.hash == b.hash:
		return entry{mode: mode, hash: t.hash}, nil
	case t.hash == b.hash:
		return entry{mode: mode, hash: o.hash}, nil
	}
	style, why, err := m.mergeStyle(p)
	if err != nil {
		return entry{}, err
	}
	var merged string
	if why == "" {
		if merged, why, err = m.mergeBlobs(b.hash, o.hash, t.hash, style); err != nil {
			return entry{}, err
		}
	}
	if why != "" {
		m.conflict(p, why+note)
		return entry{}, nil
	}
	h, err := m.encodeBlob(merged)
	if err != nil {
		return entry{}, err
	}
	return entry{mode: mode, hash: h}, nil
}

// mergeModes merges the executable bit as merge-ort does: a side that
// changed the mode wins; both changing it differently is a conflict (not
// possible between two regular modes, but kept for clarity).
func mergeModes(base, ours, theirs filemode.FileMode) (filemode.FileMode, bool) {
	if ours == theirs || ours == base {
		return theirs, true
	}
	return ours, theirs == base
}

// mergeBlobs merges three blobs line by line. why is non-empty when they
// cannot be merged, or not with certainty that git would merge them the
// same way; then the path is a conflict.
func (m *treeMerge) mergeBlobs(bh, oh, th plumbing.Hash, style lineStyle) (merged string, why string, err error) {
	var texts [3]string
	for i, h := range []plumbing.Hash{bh, oh, th} {
		size, err := m.r.objectSize(h)
		if err != nil {
			return "", "", fmt.Errorf("size of blob %s: %w", h, err)
		}
		if size > maxLineMergeSize {
			return "", fmt.Sprintf("content changed on both sides; a %d-byte file is too large to merge line by line", size), nil
		}
		if texts[i], err = m.r.readBlob(h); err != nil {
			return "", "", err
		}
		if isBinary(texts[i]) {
			return "", "binary file changed on both sides", nil
		}
	}
	merged, why = mergeLines(m.ctx, texts[0], texts[1], texts[2], style)
	if err := canceled(m.ctx, "a line merge"); err != nil {
		return "", "", err // a diff cut short: why says nothing
	}
	return merged, why, nil
}

// isBinary is git's buffer_is_binary: a NUL byte among the first 8000.
func isBinary(s string) bool {
	return strings.IndexByte(s[:min(len(s), binaryProbe)], 0) >= 0
}

func (r *repo) readBlob(h plumbing.Hash) (string, error) {
	o, err := r.object(plumbing.BlobObject, h)
	var blob *object.Blob
	if err == nil {
		blob, err = object.DecodeBlob(o)
	}
	if err != nil {
		return "", fmt.Errorf("blob %s: %w", h, err)
	}
	rd, err := blob.Reader()
	if err != nil {
		return "", fmt.Errorf("blob %s: %w", h, err)
	}
	defer rd.Close()
	var b strings.Builder
	b.Grow(int(blob.Size))
	if _, err := io.Copy(&b, rd); err != nil {
		return "", fmt.Errorf("read blob %s: %w", h, err)
	}
	return b.String(), nil
}

// encodeBlob encodes a new blob in memory and keeps it for writing.
func (m *treeMerge) encodeBlob(content string) (plumbing.Hash, error) {
	obj := m.r.s.NewEncodedObject()
	obj.SetType(plumbing.BlobObject)
	obj.SetSize(int64(len(content)))
	w, err := obj.Writer()
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("encode blob: %w", err)
	}
	if _, err := io.Copy(w, strings.NewReader(content)); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("encode blob: %w", err)
	}
	if err := w.Close(); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("encode blob: %w", err)
	}
	m.objects = append(m.objects, obj)
	return obj.Hash(), nil
}

// readOptional reads a file of the git directory; a missing file is empty.
func readOptional(gitDir string, elem ...string) ([]byte, error) {
	name := filepath.Join(append([]string{gitDir}, elem...)...)
	b, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return b, nil
}

// object reads an object the merge made (the overlay) or else the store's:
// a virtual base's objects are never written, yet read like any other.
func (r *repo) object(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	if o, ok := r.overlay[h]; ok {
		return o, nil
	}
	return r.s.Object(t, h)
}

// objectSize is an object's size, without reading it.
func (r *repo) objectSize(h plumbing.Hash) (int64, error) {
	if o, ok := r.overlay[h]; ok {
		return o.Size(), nil
	}
	return r.s.Storer().EncodedObjectSize(h)
}
