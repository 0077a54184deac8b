package mountinfo

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// mounts is a mountinfo file as Linux writes it: a container's root on
// overlayfs, NFS volumes with and without options that keep locks local,
// a bind mount of a directory of one of them, and paths with spaces.
const mounts = `21 26 0:20 / /proc rw,relatime - proc proc rw
26 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard
100 26 0:50 / /srv/repos rw,relatime shared:40 - nfs4 files.example.com:/export/repos rw,vers=4.2,rsize=1048576,wsize=1048576,namlen=255,hard,proto=tcp,timeo=600,retrans=2,sec=sys,clientaddr=10.0.0.5,local_lock=none,addr=10.0.0.2
101 26 0:51 / /srv/flock rw,relatime - nfs4 files.example.com:/export/flock rw,vers=4.1,rsize=1048576,wsize=1048576,namlen=255,hard,proto=tcp,timeo=600,retrans=2,sec=sys,clientaddr=10.0.0.5,local_lock=flock,addr=10.0.0.2
102 26 0:52 / /srv/all rw,relatime - nfs4 files.example.com:/export/all rw,vers=4.2,hard,proto=tcp,local_lock=all,addr=10.0.0.2
103 26 0:53 / /srv/posix rw,relatime - nfs4 files.example.com:/export/posix rw,vers=4.2,hard,proto=tcp,local_lock=posix,addr=10.0.0.2
104 26 0:54 / /srv/v3 rw,relatime - nfs files.example.com:/export/v3 rw,vers=3,rsize=1048576,wsize=1048576,namlen=255,hard,nolock,proto=tcp,timeo=600,retrans=2,sec=sys,mountaddr=10.0.0.2,mountvers=3,mountport=20048,mountproto=udp,local_lock=all,addr=10.0.0.2
105 26 0:55 / /srv/v3lockd rw,relatime - nfs files.example.com:/export/v3lockd rw,vers=3,hard,proto=tcp,mountaddr=10.0.0.2,mountvers=3,local_lock=none,addr=10.0.0.2
106 100 0:50 /team\040a /srv/repos/bound\040in rw,relatime shared:40 - nfs4 files.example.com:/export/repos rw,vers=4.2,hard,proto=tcp,local_lock=none,addr=10.0.0.2
107 26 0:52 /sub /srv/bind\040of\040all rw,relatime - nfs4 files.example.com:/export/all rw,vers=4.2,hard,proto=tcp,local_lock=all,addr=10.0.0.2
108 26 254:0 /var/lib/data /data rw,relatime - ext4 /dev/vda rw,discard
109 26 0:56 / /srv/repos rw,relatime - nfs4 other.example.com:/x rw,vers=4.2,local_lock=flock,addr=10.0.0.3
110 26 0:57 / /mnt/fuse rw,nosuid,nodev,relatime - fuse.sshfs user@host:/ rw,user_id=0,group_id=0
`

func TestParse(t *testing.T) {
	ms, err := Parse([]byte(mounts))
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 13 {
		t.Fatalf("%d mounts, want 13", len(ms))
	}
	bound := ms[8]
	if bound.ID != 106 || bound.Parent != 100 || bound.Root != "/team a" || bound.Point != "/srv/repos/bound in" ||
		bound.FSType != "nfs4" || bound.Source != "files.example.com:/export/repos" ||
		!slices.Equal(bound.Options, []string{"rw", "relatime"}) || !slices.Contains(bound.SuperOptions, "local_lock=none") {
		t.Errorf("bind mount line = %+v", bound)
	}
	for _, bad := range []string{
		"26 1 254:0 / / rw,relatime ext4 /dev/vda rw",         // no separator
		"x 1 254:0 / / rw,relatime - ext4 /dev/vda rw",        // id
		"26 1 254:0 / /a\\04 rw,relatime - ext4 /dev/vda rw",  // escape cut short
		"26 1 254:0 / /a\\9zz rw,relatime - ext4 /dev/vda rw", // not octal
		"26 1 254:0 / / rw - ext4",                            // no source
	} {
		if _, err := Parse([]byte(mounts + bad + "\n")); err == nil || !strings.Contains(err.Error(), "line 14") {
			t.Errorf("Parse with %q = %v; want an error naming line 14", bad, err)
		}
	}
}

func TestFindAndLocalLocks(t *testing.T) {
	ms, err := Parse([]byte(mounts))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path, point, option string
	}{
		{path: "/", point: "/"},
		{path: "/home/prsaga/repos", point: "/"},
		{path: "/data/repos", point: "/data"},
		{path: "/srv/repos-other", point: "/"},                                // a prefix, not a parent directory
		{path: "/srv/repos", point: "/srv/repos", option: "local_lock=flock"}, // two mounts there: the last is on top
		{path: "/srv/repos/bound in/acme", point: "/srv/repos/bound in"},
		{path: "/srv/flock/acme/widgets.git", point: "/srv/flock", option: "local_lock=flock"},
		{path: "/srv/all", point: "/srv/all", option: "local_lock=all"},
		{path: "/srv/posix/x", point: "/srv/posix", option: "local_lock=posix"},
		{path: "/srv/v3/x", point: "/srv/v3", option: "nolock"},
		{path: "/srv/v3lockd/x", point: "/srv/v3lockd"},
		{path: "/srv/bind of all/x", point: "/srv/bind of all", option: "local_lock=all"},
		{path: "/mnt/fuse/x", point: "/mnt/fuse"},
	} {
		m, ok := Find(ms, tc.path)
		if !ok || m.Point != tc.point {
			t.Errorf("Find(%q) = %q, %v; want %q", tc.path, m.Point, ok, tc.point)
			continue
		}
		if got := LocalLocks(m); got != tc.option {
			t.Errorf("LocalLocks of %q's mount = %q, want %q", tc.path, got, tc.option)
		}
	}
	// Per-mount options count too (an old kernel or a user space mount
	// helper may list nolock there).
	if got := LocalLocks(Mount{FSType: "nfs", Options: []string{"rw", "nolock"}}); got != "nolock" {
		t.Errorf("nolock among the per-mount options: %q", got)
	}
	if got := LocalLocks(Mount{FSType: "ext4", SuperOptions: []string{"nolock"}}); got != "" {
		t.Errorf("nolock on ext4: %q; want nothing (not NFS)", got)
	}
}

func TestCheckSharedLocks(t *testing.T) {
	ms, err := Parse([]byte(mounts))
	if err != nil {
		t.Fatal(err)
	}
	// The real path is judged, not the link: a link on the root file
	// system to a directory on the unsafe mount is refused.
	dir := t.TempDir()
	// Mounts as seen from the test: the temp dir on a local mount, and a
	// made-up unsafe NFS mount at a directory of it.
	nfs := filepath.Join(dir, "nfs")
	if err := os.Mkdir(nfs, 0o777); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(nfs, link); err != nil {
		t.Fatal(err)
	}
	real, err := filepath.EvalSymlinks(nfs)
	if err != nil {
		t.Fatal(err)
	}
	unsafe := ms[3] // local_lock=flock
	unsafe.Point = real
	withNFS := append(slices.Clone(ms), unsafe)
	for _, p := range []string{nfs, link, filepath.Join(link, ".")} {
		err := checkSharedLocks(withNFS, p)
		if !errors.Is(err, ErrLocalLocks) || !strings.Contains(err.Error(), "local_lock=flock") || !strings.Contains(err.Error(), real) {
			t.Errorf("checkSharedLocks(%q) = %v; want ErrLocalLocks naming local_lock=flock and the mount", p, err)
		}
	}
	if err := checkSharedLocks(withNFS, dir); err != nil {
		t.Errorf("checkSharedLocks of the local parent = %v", err)
	}
	// This machine's own mounts: the test's temp dir is accepted here
	// unless it really is on such a mount.
	if err := CheckSharedLocks(dir); err != nil && !errors.Is(err, ErrLocalLocks) {
		t.Errorf("CheckSharedLocks(%q) = %v", dir, err)
	}
}
