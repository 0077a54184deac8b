package gitrepo

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
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
	mode, ok := mergeModes(b.mode, o.mode, t.mode)
	if !ok {
		m.conflict(p, "file mode changed differently on both sides")
		return entry{}, nil
	}
	switch {
	case o.hash == t.hash || o.hash == b.hash:
		return entry{mode: mode, hash: t.hash}, nil
	case t.hash == b.hash:
		return entry{mode: mode, hash: o.hash}, nil
	}
	if why, err := m.lineMergeBlocked(p); err != nil || why != "" {
		if err == nil {
			m.conflict(p, "content changed on both sides ("+why+")")
		}
		return entry{}, err
	}
	merged, why, err := m.mergeBlobs(b.hash, o.hash, t.hash)
	if err != nil || why != "" {
		if err == nil {
			m.conflict(p, why)
		}
		return entry{}, err
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
func (m *treeMerge) mergeBlobs(bh, oh, th plumbing.Hash) (merged string, why string, err error) {
	var texts [3]string
	for i, h := range []plumbing.Hash{bh, oh, th} {
		size, err := m.r.st.EncodedObjectSize(h)
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
	merged, why = mergeLines(texts[0], texts[1], texts[2], lineStyleText)
	return merged, why, nil
}

// isBinary is git's buffer_is_binary: a NUL byte among the first 8000.
func isBinary(s string) bool {
	return strings.IndexByte(s[:min(len(s), binaryProbe)], 0) >= 0
}

func (r *Repo) readBlob(h plumbing.Hash) (string, error) {
	blob, err := object.GetBlob(r.st, h)
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
	obj := m.r.st.NewEncodedObject()
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

// lineMergeBlocked says why git might not merge path p with its built-in
// line merge: a merge attribute (merge=binary, -merge, a custom driver)
// could apply to it. git reads attributes from the repository's
// info/attributes and — since 2.42, in a bare repository — from .gitattributes
// files of HEAD's tree; any .gitattributes on p's way in HEAD or in the
// three merged trees, or any info/attributes, turns line merges off for p.
// merge.renormalize (which makes git convert line endings first) turns them
// off everywhere.
func (m *treeMerge) lineMergeBlocked(p string) (string, error) {
	if m.blocked == nil {
		why, err := m.r.lineMergeConfig()
		if err != nil {
			return "", err
		}
		m.blocked = &why
	}
	if *m.blocked != "" {
		return *m.blocked, nil
	}
	for _, root := range m.attrTrees {
		has, err := m.r.attributesOnPath(root, p)
		if err != nil {
			return "", err
		}
		if has {
			return ".gitattributes may set a merge driver for it; not merged line by line", nil
		}
	}
	return "", nil
}

// attributesOnPath reports whether tree root holds a .gitattributes file in
// p's directory or any directory above it.
func (r *Repo) attributesOnPath(root plumbing.Hash, p string) (bool, error) {
	dir := root
	parts := strings.Split(path.Dir(p), "/")
	if parts[0] == "." {
		parts = nil
	}
	for i := 0; ; i++ {
		entries, err := r.readTree(dir)
		if err != nil {
			return false, err
		}
		if _, ok := entries[".gitattributes"]; ok {
			return true, nil
		}
		if i == len(parts) {
			return false, nil
		}
		next, ok := entries[parts[i]]
		if !ok || !next.isDir() {
			return false, nil
		}
		dir = next.hash
	}
}

// lineMergeConfig reads what in the repository itself could change how git
// merges contents: info/attributes, merge.renormalize.
func (r *Repo) lineMergeConfig() (string, error) {
	attrs, err := readOptional(r.dir, "info", "attributes")
	if err != nil {
		return "", err
	}
	if len(bytes.TrimSpace(attrs)) > 0 {
		return "the repository has info/attributes; not merged line by line", nil
	}
	cfg, err := r.st.Config()
	if err != nil {
		return "", fmt.Errorf("read config: %w", err)
	}
	if cfg.Raw != nil && cfg.Raw.Section("merge").Options.Get("renormalize") != "" {
		return "merge.renormalize is configured; not merged line by line", nil
	}
	return "", nil
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
