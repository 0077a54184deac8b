package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/prsaga/prsaga/platform/repopath"
	"github.com/prsaga/prsaga/services/merger/gitrepo/gitobj"
)

// Checker replays merges of any repository in memory, for `prsaga
// merge-check`: the merge engine of Merge, minus everything that writes.
// New blobs and trees stay in memory (the engine returns them, nothing
// writes them); the repository's refs and objects are never written.
type Checker struct {
	r *Repo
}

// MergeCommit is a two-parent commit of a repository's history: its first
// parent the branch merged into, its second the branch merged.
type MergeCommit struct {
	Hash, Ours, Theirs string
	Tree               string // the tree the merge commit recorded
}

// OpenChecker opens the git directory dir (bare, or a work tree's .git)
// read-only.
func OpenChecker(dir string) (*Checker, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if !repopath.IsBare(abs) {
		return nil, fmt.Errorf("open %s: %w (not a git directory)", dir, ErrRepoNotFound)
	}
	rs := &Repos{root: filepath.Dir(abs), repos: map[string]*Repo{}, cache: gitobj.NewCache(DefaultCacheBytes), graphLimit: maxGraphNodesTotal}
	return &Checker{r: rs.newRepo(filepath.Base(abs), abs)}, nil
}

// Close releases the repository's files.
func (c *Checker) Close() error { return c.r.store.Close() }

// MergeCommits lists the two-parent commits reachable from the branches
// and tags — with allRefs, from every ref (a forge's refs/pull/*, remote
// branches) — newest first by committer date (then hash).
func (c *Checker) MergeCommits(allRefs bool) ([]MergeCommit, error) {
	c.r.mu.Lock()
	defer c.r.mu.Unlock()
	defer c.r.store.Session()()
	st := c.r.store.Storer()
	refs, err := st.IterReferences()
	if err != nil {
		return nil, fmt.Errorf("list refs: %w", err)
	}
	var starts []plumbing.Hash
	err = refs.ForEach(func(ref *plumbing.Reference) error {
		if ref.Type() == plumbing.HashReference && (allRefs || ref.Name().IsBranch() || ref.Name().IsTag()) {
			starts = append(starts, ref.Hash())
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list refs: %w", err)
	}
	seen := map[plumbing.Hash]bool{}
	var merges []*object.Commit
	for len(starts) > 0 {
		h := starts[len(starts)-1]
		starts = starts[:len(starts)-1]
		if seen[h] {
			continue
		}
		seen[h] = true
		o, err := st.EncodedObject(plumbing.AnyObject, h)
		if err != nil {
			return nil, fmt.Errorf("object %s: %w", h, err)
		}
		switch o.Type() {
		case plumbing.TagObject: // an annotated tag: what it tags
			t, err := object.DecodeTag(st, o)
			if err != nil {
				return nil, fmt.Errorf("tag %s: %w", h, err)
			}
			starts = append(starts, t.Target)
			continue
		case plumbing.CommitObject:
		default:
			continue // a tag of a tree or blob
		}
		cm, err := c.r.store.Commit(h)
		if err != nil {
			return nil, err
		}
		if len(cm.ParentHashes) == 2 {
			merges = append(merges, cm)
		}
		starts = append(starts, cm.ParentHashes...)
	}
	sort.Slice(merges, func(i, j int) bool {
		a, b := merges[i].Committer.When, merges[j].Committer.When
		if !a.Equal(b) {
			return a.After(b)
		}
		return merges[i].Hash.String() < merges[j].Hash.String()
	})
	out := make([]MergeCommit, len(merges))
	for i, m := range merges {
		out[i] = MergeCommit{Hash: m.Hash.String(), Ours: m.ParentHashes[0].String(), Theirs: m.ParentHashes[1].String(), Tree: m.TreeHash.String()}
	}
	return out, nil
}

// MergeTree merges commit theirs into commit ours as Merge would (strategy
// merge) and returns the merged tree's id, or a *ConflictError (the
// refusal's reason) — without writing anything.
func (c *Checker) MergeTree(ours, theirs string) (string, error) {
	r := c.r
	r.mu.Lock()
	defer r.mu.Unlock()
	defer r.store.Session()()
	ctx := context.Background() // a check runs to its end
	o, err := r.store.Commit(plumbing.NewHash(ours))
	if err != nil {
		return "", err
	}
	t, err := r.store.Commit(plumbing.NewHash(theirs))
	if err != nil {
		return "", err
	}
	bases, err := r.history.MergeBases(ctx, o, t)
	if err != nil {
		return "", err
	}
	if len(bases) == 0 {
		return "", &ConflictError{Reason: "the PR head and the target branch have no common history"}
	}
	e := r.engine()
	base, err := e.BaseTree(ctx, bases, o.TreeHash)
	if err != nil {
		return "", err
	}
	tree, _, err := e.MergeTrees(ctx, base, o.TreeHash, t.TreeHash, o.TreeHash)
	if err != nil {
		return "", err
	}
	return tree.String(), nil
}

// AttributesFiles returns the .gitattributes files of commit's tree by
// path: what git's merge must be shown to decide as prsaga does (see
// engine/attributes.go).
func (c *Checker) AttributesFiles(commit string) (map[string]string, error) {
	r := c.r
	r.mu.Lock()
	defer r.mu.Unlock()
	defer r.store.Session()()
	cm, err := r.store.Commit(plumbing.NewHash(commit))
	if err != nil {
		return nil, err
	}
	return r.engine().AttributesFiles(context.Background(), cm.TreeHash)
}

// IsConflict reports whether err is a merge's refusal, and its reason.
func IsConflict(err error) (string, bool) {
	var ce *ConflictError
	if errors.As(err, &ce) {
		return ce.Reason, true
	}
	return "", false
}
