package engine

import (
	"fmt"
	"path"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// Inexact renames merged with a change on the other side. When one side
// renames a file and edits it, and the other side edits it in place, git
// pairs the deletion with the addition by a similarity score (how much of
// the old content is found in the new, in line-sized chunks, relative to
// the larger file; 50% at least) and merges the other side's edits into
// the new name. That score is git's own; ours (similarity below) is an
// estimate of the same quantity, so a pair is merged only where git's
// pairing is beyond doubt:
//
//   - the estimate is at least renameSure, and every other pair that could
//     compete for the old or the new name — any deleted/added file of that
//     side within git's size window — is estimated below renameRival (and
//     is not binary), so that git has one candidate each way;
//   - both are regular text files, non-empty, and the other side changed
//     the old name in place, as a regular file;
//   - the other side has nothing at the new name, and every directory
//     above it is a directory or absent on the other side and in the base;
//   - neither side's list of deletions or additions is long enough for
//     git's rename limit to matter, and the repository's config sets
//     nothing about renames.
//
// The merge is then the content merge of the old name's base version with
// the two sides' versions, at the new name, modes merged, by the new
// name's merge attribute (as git: TestInexactRenameCases). A content
// conflict stays a conflict. Renames on both
// sides, rename/delete and the rest stay with renames.go.

const (
	// renameSure is the least estimate at which a pair is merged, and
	// renameRival the estimate below which another pair is sure not to be
	// a rename for git (whose threshold is 0.5). The estimate follows
	// git's score closely: with the margins cut to 0.52/0.48, 1,900 random
	// histories (TestInexactRenamesNeverWrong, two seeds) and the corpus
	// showed no pairing different from git's; 0.1 each way is kept.
	renameSure  = 0.6
	renameRival = 0.4
	// maxRenameSide bounds each side's deletions and additions considered
	// (far below git's merge.renameLimit, 7000).
	maxRenameSide = 500
	// maxRenameBlob is the largest blob compared, and maxRenameRead the
	// most bytes of blobs one merge reads for its estimates; beyond it, no
	// further pair is merged.
	maxRenameBlob = 1 << 20
	maxRenameRead = 64 << 20
	// chunkMax is the longest chunk: longer lines are cut.
	chunkMax = 64
)

// renameSide is one side's deletions and additions that git may pair
// inexactly, and the tree of the other side.
type renameSide struct {
	del, add []pathEntry
	other    plumbing.Hash
	ours     bool // the renaming side is ours
}

// findInexactRenames adds the inexact renames beyond doubt to m.fixes.
func (m *treeMerge) findInexactRenames(base plumbing.Hash, sl *sideLists) error {
	sims := &simCache{r: m.r, chunks: map[plumbing.Hash]map[string]int{}, sizes: map[plumbing.Hash]int64{}}
	for _, ours := range []bool{true, false} {
		s, err := sl.side(ours)
		if err != nil {
			return err
		}
		if len(s.del) == 0 || len(s.add) == 0 {
			continue // no pair: W2's target side adds hundreds of files and deletes none
		}
		del, add := inexactCandidates(s.del, s.add)
		if len(del) == 0 || len(add) == 0 || len(del) > maxRenameSide || len(add) > maxRenameSide {
			continue
		}
		// Asked only now: the config is a file read per merge, and most
		// merges have no candidates.
		if set, err := m.r.renameConfig(); err != nil || set {
			return err
		}
		for _, d := range del {
			if _, fixed := m.fixes[d.path]; fixed || !d.e.isRegular() {
				continue
			}
			changed, err := m.r.entryAt(s.other, d.path)
			if err != nil {
				return err
			}
			if !changed.isRegular() || changed == d.e {
				continue // not a file there, or unchanged: the tree merge is right as it is
			}
			if err := canceled(m.ctx, "the rename check of "+d.path); err != nil {
				return err // soleMatch reads and compares many files
			}
			a, ok, err := sims.soleMatch(d, del, add)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			if _, fixed := m.fixes[a.path]; fixed || !a.e.isRegular() {
				continue
			}
			if at, err := m.r.entryAt(s.other, a.path); err != nil || at.present() {
				if err != nil {
					return err
				}
				continue
			}
			if open, err := m.r.dirsOrAbsent(a.path, base, s.other); err != nil || !open {
				if err != nil {
					return err
				}
				continue
			}
			o, t := a.e, changed
			if !s.ours {
				o, t = changed, a.e
			}
			res, err := m.mergeRenamed(d.path, a.path, d.e, o, t)
			if err != nil {
				return err
			}
			if m.fixes == nil {
				m.fixes, m.fixDirs = map[string]renameFix{}, map[string]bool{}
			}
			m.fixes[d.path] = renameFix{}
			m.fixes[a.path] = renameFix{new: res, isNew: true}
			for dir := path.Dir(a.path); dir != "."; dir = path.Dir(dir) {
				m.fixDirs[dir] = true
			}
		}
	}
	return nil
}

// mergeRenamed merges base b with the sides' versions o and t of a file
// renamed from old to new: the merged entry, or the zero entry and a
// conflict recorded at the new name.
func (m *treeMerge) mergeRenamed(old, new string, b, o, t entry) (entry, error) {
	return m.mergeContents(new, " (renamed from "+old+")", b, o, t) // git merges by the new name's attributes
}

// inexactCandidates drops the files git pairs exactly: a blob deleted and
// added the same number of times is paired by its blob alone. The rest
// (regular files only: git pairs no file with a symlink or a gitlink)
// go to git's inexact matching.
func inexactCandidates(del, add []pathEntry) (d, a []pathEntry) {
	nd, na := map[plumbing.Hash]int{}, map[plumbing.Hash]int{}
	for _, x := range del {
		nd[x.e.hash]++
	}
	for _, x := range add {
		na[x.e.hash]++
	}
	for _, x := range del {
		if x.e.isRegular() && nd[x.e.hash] != na[x.e.hash] {
			d = append(d, x)
		}
	}
	for _, x := range add {
		if x.e.isRegular() && nd[x.e.hash] != na[x.e.hash] {
			a = append(a, x)
		}
	}
	return d, a
}

// simCache estimates similarities, keeping each blob's chunks.
type simCache struct {
	r      *repo
	chunks map[plumbing.Hash]map[string]int // chunk → occurrences; nil: not comparable (binary, too large)
	sizes  map[plumbing.Hash]int64
	read   int64 // bytes of blobs read
}

// soleMatch finds the added file git pairs with deleted file d, if that is
// beyond doubt: the one estimated at least renameSure while every rival
// pair of d or of it is estimated below renameRival.
func (c *simCache) soleMatch(d pathEntry, del, add []pathEntry) (pathEntry, bool, error) {
	var best pathEntry
	found := false
	for _, a := range add {
		s, comparable, err := c.similarity(d.e.hash, a.e.hash)
		if err != nil {
			return pathEntry{}, false, err
		}
		switch {
		case comparable && s >= renameSure && !found:
			best, found = a, true
		case !comparable || s >= renameRival:
			return pathEntry{}, false, nil // two candidates, or one not estimated
		}
	}
	if !found {
		return pathEntry{}, false, nil
	}
	if text, err := c.text(d.e.hash); err != nil || text == nil {
		return pathEntry{}, false, err // binary or empty old file
	}
	for _, o := range del {
		if o.path == d.path {
			continue
		}
		s, comparable, err := c.similarity(o.e.hash, best.e.hash)
		if err != nil {
			return pathEntry{}, false, err
		}
		if !comparable || s >= renameRival {
			return pathEntry{}, false, nil
		}
	}
	return best, true, nil
}

// similarity estimates git's score of a rename from blob src to blob dst:
// the bytes of src's chunks also found in dst, over the larger size.
// comparable is false when no estimate is made (a binary or very large
// file within git's size window); files whose sizes differ by more than
// half the larger are never paired by git and score 0.
func (c *simCache) similarity(src, dst plumbing.Hash) (float64, bool, error) {
	ss, err := c.size(src)
	if err != nil {
		return 0, false, err
	}
	sd, err := c.size(dst)
	if err != nil {
		return 0, false, err
	}
	larger := max(ss, sd)
	if larger == 0 || 2*(larger-min(ss, sd)) > larger {
		return 0, true, nil
	}
	cs, err := c.text(src)
	if err != nil || cs == nil {
		return 0, false, err
	}
	cd, err := c.text(dst)
	if err != nil || cd == nil {
		return 0, false, err
	}
	var common int
	for ch, n := range cs {
		common += min(n, cd[ch]) * len(ch)
	}
	return float64(common) / float64(larger), true, nil
}

func (c *simCache) size(h plumbing.Hash) (int64, error) {
	if s, ok := c.sizes[h]; ok {
		return s, nil
	}
	s, err := c.r.objectSize(h)
	if err != nil {
		return 0, fmt.Errorf("size of blob %s: %w", h, err)
	}
	c.sizes[h] = s
	return s, nil
}

// text returns blob h's chunks (nil for a binary, empty or too large
// blob, or once the read budget is spent).
func (c *simCache) text(h plumbing.Hash) (map[string]int, error) {
	if ch, ok := c.chunks[h]; ok {
		return ch, nil
	}
	size, err := c.size(h)
	if err != nil {
		return nil, err
	}
	var ch map[string]int
	if size > 0 && size <= maxRenameBlob && c.read+size <= maxRenameRead {
		c.read += size
		s, err := c.r.readBlob(h)
		if err != nil {
			return nil, err
		}
		if !isBinary(s) {
			ch = chunks(s)
		}
	}
	c.chunks[h] = ch
	return ch, nil
}

// chunks cuts a text into lines, and lines longer than chunkMax into
// pieces of chunkMax bytes, counting each distinct chunk. A CR before a
// line's LF is dropped, so that line endings alone do not tell two
// versions apart (git's score ignores them too).
func chunks(s string) map[string]int {
	out := map[string]int{}
	for len(s) > 0 {
		n := strings.IndexByte(s, '\n') + 1
		if n == 0 {
			n = len(s)
		}
		n = min(n, chunkMax)
		ch := s[:n]
		if strings.HasSuffix(ch, "\r\n") {
			ch = ch[:len(ch)-2] + "\n"
		}
		out[ch]++
		s = s[n:]
	}
	return out
}

// renameConfig reports whether the repository's config says anything
// about renames (merge.renames, diff.renames, their limits): then git's
// detection may differ from its default, and no inexact rename is merged.
func (r *repo) renameConfig() (bool, error) {
	cfg, err := r.config()
	if err != nil {
		return false, fmt.Errorf("read config: %w", err)
	}
	if cfg.Raw == nil {
		return false, nil
	}
	for _, sec := range []string{"merge", "diff"} {
		opts := cfg.Raw.Section(sec).Options
		if opts.Has("renames") || opts.Has("renameLimit") {
			return true, nil
		}
	}
	return false, nil
}
