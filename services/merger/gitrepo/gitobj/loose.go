package gitobj

import (
	"errors"
	"io/fs"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/prsaga/prsaga/platform/gitloose"
)

// Object returns object h, which must be of type t unless t is
// plumbing.AnyObject (plumbing.ErrObjectNotFound otherwise, as go-git
// answers): from the cache of encoded objects, else read here as a loose
// object (platform/gitloose: an open, reads and a close, the content
// checked against its name), else from go-git's storage (packs,
// alternates, an incoming quarantine directory).
func (r *Store) Object(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	o, ok := r.cache.Get(h)
	if !ok {
		var err error
		o, err = gitloose.Read(gitloose.Path(r.dir, h), h)
		if errors.Is(err, fs.ErrNotExist) {
			return r.Storer().EncodedObject(t, h)
		}
		if err != nil {
			return nil, err
		}
		r.cache.Put(o)
	}
	if t != plumbing.AnyObject && o.Type() != t {
		return nil, plumbing.ErrObjectNotFound
	}
	return o, nil
}
