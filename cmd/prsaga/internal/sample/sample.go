// Package sample builds bare git repositories for the demo and the
// benchmark with go-git: a forge's repositories, without the git command.
package sample

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Repo is a bare repository being populated. Not safe for concurrent use.
type Repo struct {
	r     *git.Repository
	files map[plumbing.Hash]map[string]string // commit -> its files
	when  time.Time
}

// Init creates <reposDir>/<owner>/<name>.git with HEAD on main.
func Init(reposDir, repo string) (*Repo, error) {
	dir := filepath.Join(reposDir, filepath.FromSlash(repo)+".git")
	r, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{
		Bare:        true,
		InitOptions: git.InitOptions{DefaultBranch: plumbing.Main},
	})
	if err != nil {
		return nil, fmt.Errorf("init %s: %w", repo, err)
	}
	return &Repo{r: r, files: map[plumbing.Hash]map[string]string{}, when: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)}, nil
}

// Commit writes a commit on parent (zero hash: a root commit) whose tree is
// the parent's files with changes applied (an empty content deletes), and
// points branch at it.
func (s *Repo) Commit(branch string, parent plumbing.Hash, changes map[string]string, msg string) (plumbing.Hash, error) {
	files := map[string]string{}
	for k, v := range s.files[parent] {
		files[k] = v
	}
	for k, v := range changes {
		if v == "" {
			delete(files, k)
		} else {
			files[k] = v
		}
	}
	tree, err := s.tree(files, "")
	if err != nil {
		return plumbing.ZeroHash, err
	}
	s.when = s.when.Add(time.Minute)
	sig := object.Signature{Name: "Sample Author", Email: "author@example.com", When: s.when}
	c := &object.Commit{Author: sig, Committer: sig, Message: msg + "\n", TreeHash: tree}
	if !parent.IsZero() {
		c.ParentHashes = []plumbing.Hash{parent}
	}
	h, err := s.store(c)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	s.files[h] = files
	if branch != "" {
		if err := s.SetBranch(branch, h); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	return h, nil
}

// SetBranch points refs/heads/<branch> at h.
func (s *Repo) SetBranch(branch string, h plumbing.Hash) error {
	return s.r.Storer.SetReference(plumbing.NewHashReference(plumbing.NewBranchReferenceName(branch), h))
}

type encoder interface {
	Encode(o plumbing.EncodedObject) error
}

func (s *Repo) store(v encoder) (plumbing.Hash, error) {
	o := s.r.Storer.NewEncodedObject()
	if err := v.Encode(o); err != nil {
		return plumbing.ZeroHash, err
	}
	return s.r.Storer.SetEncodedObject(o)
}

func (s *Repo) tree(files map[string]string, prefix string) (plumbing.Hash, error) {
	children := map[string]map[string]string{}
	var entries []object.TreeEntry
	for p, content := range files {
		rest, ok := strings.CutPrefix(p, prefix)
		if !ok {
			continue
		}
		if dir, _, nested := strings.Cut(rest, "/"); nested {
			if children[dir] == nil {
				children[dir] = map[string]string{}
			}
			children[dir][p] = content
			continue
		}
		o := s.r.Storer.NewEncodedObject()
		o.SetType(plumbing.BlobObject)
		w, err := o.Writer()
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if _, err := w.Write([]byte(content)); err != nil {
			return plumbing.ZeroHash, err
		}
		if err := w.Close(); err != nil {
			return plumbing.ZeroHash, err
		}
		h, err := s.r.Storer.SetEncodedObject(o)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		entries = append(entries, object.TreeEntry{Name: rest, Mode: filemode.Regular, Hash: h})
	}
	for dir, sub := range children {
		h, err := s.tree(sub, prefix+dir+"/")
		if err != nil {
			return plumbing.ZeroHash, err
		}
		entries = append(entries, object.TreeEntry{Name: dir, Mode: filemode.Dir, Hash: h})
	}
	sort.Sort(object.TreeEntrySorter(entries))
	return s.store(&object.Tree{Entries: entries})
}
