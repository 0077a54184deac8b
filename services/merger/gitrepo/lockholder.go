package gitrepo

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
// The holder is a process identity that outlives nothing: the kernel's boot
// id and the pid namespace say which pid space the pid belongs to (the init
// pid namespace has the same inode number on every machine, the boot id is
// random per boot), and the process's start time (/proc/<pid>/stat, field
// 22) tells a reused pid from the holder. A lock whose record is missing,
// unreadable, from another boot, another machine or another pid namespace
// is never judged: git's own locks hold the new ref value, not a record.

// holderMagic opens every lock record.
const holderMagic = "prsaga-ref-lock v1"

// holder identifies a process that may hold a ref lock.
type holder struct {
	host  string // for people reading the lock; not used to judge it
	boot  string // /proc/sys/kernel/random/boot_id
	pidns string // readlink /proc/self/ns/pid, e.g. "pid:[4026531836]"
	pid   int
	start uint64 // clock ticks after boot, /proc/<pid>/stat field 22
}

// me is this process, read once; ok is false where /proc cannot say (then
// the locks this process takes are never broken by anyone).
var me = sync.OnceValues(func() (holder, bool) {
	h := holder{pid: os.Getpid()}
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

// record is the lock file's content: the holder and a nonce, so that a
// breaker can tell the lock it judged from a new one that took its place
// (the holder's own locks share a record, but a dead holder takes none).
func (h holder) record() []byte {
	nonce := make([]byte, 8)
	_, _ = rand.Read(nonce) // never fails (crypto/rand panics instead)
	return fmt.Appendf(nil, "%s\nhost=%s\nboot=%s\npidns=%s\npid=%d\nstart=%d\nnonce=%s\n",
		holderMagic, oneLine(h.host), h.boot, h.pidns, h.pid, h.start, hex.EncodeToString(nonce))
}

func oneLine(s string) string { return strings.NewReplacer("\n", " ", "\r", " ").Replace(s) }

// parseRecord reads a lock file's content as a holder record; ok is false
// for anything else (git's lock holding a sha, an empty lock, a record
// missing a field).
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
		}
		if err != nil {
			return holder{}, false
		}
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

// judge says whether the holder h is a dead process. Only a holder in this
// process's own pid space (same boot, same pid namespace) is judged; a
// /proc read that fails for any reason but the pid's absence counts as
// alive.
func judge(h holder) holderState {
	self, ok := me()
	if !ok || h.boot != self.boot || h.pidns != self.pidns {
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
