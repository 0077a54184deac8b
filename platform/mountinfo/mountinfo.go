package mountinfo

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Mount is one line of a mountinfo file.
type Mount struct {
	ID, Parent int
	// Root is the directory of the file system mounted (a bind mount's
	// source within it), Point where it is mounted; both unescaped.
	Root, Point string
	Options     []string // per-mount options (rw, noatime, …)
	FSType      string   // "nfs", "nfs4", "ext4", … ("fuse.sshfs": type.subtype)
	Source      string
	// SuperOptions are the file system's own options: NFS puts vers=,
	// local_lock=, nolock, addr= … here.
	SuperOptions []string
}

// Parse reads a mountinfo file's content: one mount per line,
//
//	36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
//
// (ID, parent ID, major:minor, root, mount point, per-mount options, zero
// or more optional fields ended by "-", file system type, source, super
// options). Spaces, tabs, newlines and backslashes in the paths are
// escaped as \040, \011, \012 and \134. An error names the first line
// that does not parse.
func Parse(b []byte) ([]Mount, error) {
	var out []Mount
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			continue
		}
		m, err := parseLine(line)
		if err != nil {
			return nil, fmt.Errorf("mountinfo line %d: %w", n, err)
		}
		out = append(out, m)
	}
	return out, sc.Err()
}

func parseLine(line string) (Mount, error) {
	f := strings.Fields(line)
	sep := -1
	for i := 6; i < len(f); i++ {
		if f[i] == "-" {
			sep = i
			break
		}
	}
	if len(f) < 7 || sep < 0 || len(f) < sep+3 {
		return Mount{}, fmt.Errorf("%q: not <id> <parent> <dev> <root> <point> <options> … - <type> <source> [<options>]", line)
	}
	var m Mount
	var err error
	if m.ID, err = strconv.Atoi(f[0]); err != nil {
		return Mount{}, fmt.Errorf("mount id %q: %w", f[0], err)
	}
	if m.Parent, err = strconv.Atoi(f[1]); err != nil {
		return Mount{}, fmt.Errorf("parent id %q: %w", f[1], err)
	}
	if m.Root, err = unescape(f[3]); err != nil {
		return Mount{}, err
	}
	if m.Point, err = unescape(f[4]); err != nil {
		return Mount{}, err
	}
	m.Options = strings.Split(f[5], ",")
	m.FSType = f[sep+1]
	if m.Source, err = unescape(f[sep+2]); err != nil {
		return Mount{}, err
	}
	if len(f) > sep+3 {
		m.SuperOptions = strings.Split(f[sep+3], ",")
	}
	return m, nil
}

// unescape undoes the kernel's octal escapes (\040 and the like).
func unescape(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		if i+4 > len(s) {
			return "", fmt.Errorf("%q: bad escape", s)
		}
		v, err := strconv.ParseUint(s[i+1:i+4], 8, 8)
		if err != nil {
			return "", fmt.Errorf("%q: bad escape %q", s, s[i:i+4])
		}
		b.WriteByte(byte(v))
		i += 3
	}
	return b.String(), nil
}

// Find returns the mount path is on: the one whose mount point is the
// longest prefix of path (path is absolute and clean, symbolic links
// resolved). Of several mounts at that point the last listed is on top.
func Find(mounts []Mount, path string) (Mount, bool) {
	best, found := -1, false
	var m Mount
	for _, c := range mounts {
		if !within(path, c.Point) || len(c.Point) < best {
			continue
		}
		best, m, found = len(c.Point), c, true
	}
	return m, found
}

// within reports whether path is point or below it.
func within(path, point string) bool {
	if point == "/" {
		return strings.HasPrefix(path, "/")
	}
	return path == point || strings.HasPrefix(path, point+"/")
}

// LocalLocks names the option that makes an NFS mount keep locks on this
// node — local_lock=flock, =all or =posix, or nolock (which implies
// local_lock=all) —, "" for a mount without one or not NFS. Refused too is
// local_lock=posix: on NFS the kernel emulates flocks with POSIX locks,
// and whether those stay local is not something prsaga should depend on.
func LocalLocks(m Mount) string {
	if m.FSType != "nfs" && m.FSType != "nfs4" {
		return ""
	}
	for _, opts := range [][]string{m.Options, m.SuperOptions} {
		for _, o := range opts {
			switch o {
			case "nolock", "local_lock=flock", "local_lock=all", "local_lock=posix":
				return o
			}
		}
	}
	return ""
}

// ErrLocalLocks: a directory is on an NFS mount that keeps locks local.
var ErrLocalLocks = errors.New("NFS mount keeps locks on this node")

// CheckSharedLocks refuses dir when it is on an NFS mount whose locks stay
// on this node (LocalLocks): the error, wrapping ErrLocalLocks, names the
// mount and the option. Where there is no /proc/self/mountinfo (not
// Linux) it says nothing.
func CheckSharedLocks(dir string) error {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read mounts: %w", err)
	}
	mounts, err := Parse(b)
	if err != nil {
		return err
	}
	return checkSharedLocks(mounts, dir)
}

func checkSharedLocks(mounts []Mount, dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return err
	}
	m, ok := Find(mounts, real)
	if !ok {
		return nil
	}
	if opt := LocalLocks(m); opt != "" {
		return fmt.Errorf("%s is on %s mount %s (%s) with %s: %w", dir, m.FSType, m.Point, m.Source, opt, ErrLocalLocks)
	}
	return nil
}
