package reflock

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// A ref lock taken by a merger names its holder, so that a lock left by a
// merger that died (SIGKILL, OOM) can be told apart from one held by a live
// writer and broken instead of blocking the branch for good.
//
// Liveness is the lock file's own flock (liveness.go): the holder takes an
// exclusive flock on the lock's inode before its record is written and
// keeps it until the lock is removed; the kernel — or, on a shared volume,
// the file server's lock manager — drops it when the holder dies, in
// whatever pid namespace or on whatever machine it ran. A record says
// "live=flock" when its holder holds that flock; such a lock is dead
// exactly when a shared flock on it can be taken.
//
// Records without it (mergers before the flock, or a file system refusing
// flocks) are judged by process identity, which outlives nothing: the
// kernel's boot id and the pid namespace say which pid space the pid
// belongs to (the init pid namespace has the same inode number on every
// machine, the boot id is random per boot), and the process's start time
// (/proc/<pid>/stat, field 22) tells a reused pid from the holder; such a
// record from another boot, machine or pid namespace is never judged. A
// lock without a record is never judged: git's own locks hold the new ref
// value.

// holderMagic opens every lock record.
const holderMagic = "prsaga-ref-lock v1"

// holder identifies a process that may hold a ref lock.
type holder struct {
	host  string // for people reading the lock; not used to judge it
	boot  string // /proc/sys/kernel/random/boot_id
	pidns string // readlink /proc/self/ns/pid, e.g. "pid:[4026531836]"
	pid   int
	start uint64 // clock ticks after boot, /proc/<pid>/stat field 22
	// proc is random per process: it names the process's temporary files
	// (a pid is 1 in every container) and tells its own locks apart.
	proc string
	live bool // the lock carries the holder's flock (liveness.go)
}

// me is this process, read once; ok is false where /proc cannot say (then
// the locks this process takes are never broken by anyone).
var me = sync.OnceValues(func() (holder, bool) {
	h := holder{pid: os.Getpid(), proc: newProcID()}
	h.host, _ = os.Hostname()
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return h, false
	}
	h.boot = strings.TrimSpace(string(boot))
	if h.pidns, err = os.Readlink("/proc/self/ns/pid"); err != nil {
		return h, false
	}
	st, err := procStat(h.pid)
	if err != nil {
		return h, false
	}
	h.start = st.start
	return h, h.boot != "" && h.pidns != ""
})

// newProcID is 16 hex digits, random per process.
func newProcID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // never fails (crypto/rand panics instead)
	return hex.EncodeToString(b)
}

// validProcID: a record's proc names files, so it is checked before use.
func validProcID(s string) bool {
	if len(s) != 16 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}

// record is a lock file's content: the holder, whether the lock carries
// its flock, and a nonce telling one lock from the next.
func (h holder) record(live bool) []byte {
	nonce := make([]byte, 8)
	_, _ = rand.Read(nonce)
	liveness := ""
	if live {
		liveness = "live=flock\n"
	}
	return fmt.Appendf(nil, "%s\nhost=%s\nboot=%s\npidns=%s\npid=%d\nstart=%d\nproc=%s\n%snonce=%s\n",
		holderMagic, oneLine(h.host), h.boot, h.pidns, h.pid, h.start, h.proc, liveness, hex.EncodeToString(nonce))
}

func oneLine(s string) string { return strings.NewReplacer("\n", " ", "\r", " ").Replace(s) }

// parseRecord reads a lock file's content as a holder record; ok is false
// for anything else (git's lock holding a sha, an empty lock, a record
// missing a field). A record is complete with its process identity, or
// with its proc and live=flock (written by a process /proc could not
// describe).
func parseRecord(b []byte) (h holder, ok bool) {
	first, rest, _ := bytes.Cut(b, []byte("\n"))
	if string(first) != holderMagic {
		return holder{}, false
	}
	var have int
	for _, line := range strings.Split(string(rest), "\n") {
		k, v, found := strings.Cut(line, "=")
		if !found {
			continue
		}
		var err error
		switch k {
		case "host":
			h.host = v
		case "boot":
			h.boot, have = v, have|1
		case "pidns":
			h.pidns, have = v, have|2
		case "pid":
			h.pid, err = strconv.Atoi(v)
			have |= 4
		case "start":
			h.start, err = strconv.ParseUint(v, 10, 64)
			have |= 8
		case "proc":
			if !validProcID(v) {
				return holder{}, false
			}
			h.proc = v
		case "live":
			h.live = v == "flock"
		}
		if err != nil {
			return holder{}, false
		}
	}
	if h.live && h.proc != "" {
		return h, true
	}
	return h, have == 15 && h.boot != "" && h.pidns != "" && h.pid > 0
}

// holderState is what this process can tell about a lock's holder.
type holderState int

const (
	holderUnknown holderState = iota // not ours to judge: respect the lock
	holderAlive
	holderDead
)

func (s holderState) String() string {
	switch s {
	case holderAlive:
		return "alive"
	case holderDead:
		return "dead"
	}
	return "unknown"
}

// judgePid says whether the holder h is a dead process by its identity.
// Only a holder in this process's own pid space (same boot, same pid
// namespace) is judged; a /proc read that fails for any reason but the
// pid's absence counts as alive.
func judgePid(h holder) holderState {
	self, ok := me()
	if !ok || h.pid <= 0 || h.boot != self.boot || h.pidns != self.pidns {
		return holderUnknown
	}
	st, err := procStat(h.pid)
	switch {
	case errors.Is(err, errNoProcess):
		return holderDead
	case err != nil:
		return holderAlive // cannot tell: a live writer's lock must never be broken
	case st.start != h.start: // the pid was reused since
		return holderDead
	case st.state == 'Z' || st.state == 'X': // killed, not yet reaped
		return holderDead
	}
	return holderAlive
}

type procState struct {
	state byte
	start uint64
}

// errNoProcess: there is no process with that pid (in this pid namespace).
var errNoProcess = errors.New("no such process")

// procStat reads a process's state and start time; errNoProcess when it
// does not exist, another error when /proc could not say.
func procStat(pid int) (procState, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return procState{}, errNoProcess
	}
	if err != nil {
		return procState{}, err
	}
	st, ok := parseProcStat(b)
	if !ok {
		return procState{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	return st, nil
}

// parseProcStat parses /proc/<pid>/stat: "pid (comm) state ppid ...", comm
// may hold spaces and parentheses, so the fields are counted after the last
// ')'. State is field 3, starttime field 22.
func parseProcStat(b []byte) (procState, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procState{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 || len(f[0]) != 1 {
		return procState{}, false
	}
	start, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return procState{}, false
	}
	return procState{state: f[0][0], start: start}, true
}

// Holder is what a lock record says of its holder, for tests and for
// people reading a lock.
type Holder struct {
	Host, Boot, PIDNS string
	PID               int
	Start             uint64
	Proc              string
	Live              bool // the holder keeps an flock on the lock
}

// RecordMagic opens every lock record.
const RecordMagic = holderMagic

// ParseRecord reads a lock file's content as a holder record; ok is false
// for anything else (git's lock holding a sha, an empty lock, a record
// missing a field).
func ParseRecord(b []byte) (Holder, bool) {
	h, ok := parseRecord(b)
	return h.export(), ok
}

// Self is this process as its locks name it; ok is false where /proc
// cannot say (then nobody ever breaks its locks).
func Self() (Holder, bool) {
	h, ok := me()
	return h.export(), ok
}

func (h holder) export() Holder {
	return Holder{Host: h.host, Boot: h.boot, PIDNS: h.pidns, PID: h.pid, Start: h.start, Proc: h.proc, Live: h.live}
}
