package gitrefs

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
)

// maxPackedLine bounds one packed-refs line: a sha, a space and a ref name.
const maxPackedLine = 1 << 20

// Loose returns the content of the loose ref file ref (a slash path such as
// "refs/heads/main") in fsys, the repository's git directory. ok is false
// when there is no loose ref: no file, a directory (refs/heads/a when only
// a/b exists) or a path through a file (a/b when a is a ref); the caller then
// looks in packed-refs.
func Loose(fsys fs.FS, ref string) (content []byte, ok bool, err error) {
	b, err := fs.ReadFile(fsys, ref)
	switch {
	case err == nil:
		return b, true, nil
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.EISDIR), errors.Is(err, syscall.ENOTDIR):
		return nil, false, nil
	default:
		return nil, false, err
	}
}

// Packed returns the sha field of ref's line in fsys's packed-refs: "<sha>
// <ref>" lines, with "#" header lines and "^<sha>" peeled-tag lines skipped.
// ok is false when there is no packed-refs file or no line for ref. The sha
// is returned as written; checking it is the caller's.
func Packed(fsys fs.FS, ref string) (sha string, ok bool, err error) {
	f, err := fsys.Open("packed-refs")
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read packed-refs: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 4096), maxPackedLine)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' || line[0] == '^' {
			continue
		}
		if sha, name, ok := strings.Cut(line, " "); ok && name == ref {
			return sha, true, nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", false, fmt.Errorf("read packed-refs: %w", err)
	}
	return "", false, nil
}
