// Package datalock decides, by the kernel, which process owns a data
// directory's stores: a process that opens a part of the directory (the
// embedded NATS server's JetStream store, a service's database and files)
// holds an flock on <data>/locks/<part>.lock for as long as it runs, and a
// second process that would open the same part is refused at start,
// naming the first (pid, host, command, where it listens), which each
// holder writes into its lock files.
//
// The kernel drops an flock when its process dies however it dies
// (SIGKILL, OOM), so a crash leaves no stale lock and a restart works at
// once; no pid is trusted to tell a live owner from a dead one. The lock
// files stay in place: removing one while another process may have it
// open would let two processes lock two different files of one name.
package datalock

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Dir is the directory of the lock files inside a data directory.
const Dir = "locks"

// Part is one part of a data directory that one process at a time opens.
type Part struct {
	Name string // the lock file is <data>/locks/<Name>.lock
	// Shared lets several processes hold the part together; a process
	// taking it exclusively is still refused (the indexer: its standbys
	// share the data directory with the index's writer, and the index's
	// own writer lock decides which one writes).
	Shared bool
}

// Holder says who holds a lock; it is written into each lock file.
type Holder struct {
	PID     int       `json:"pid"`
	Host    string    `json:"host,omitempty"`
	Command string    `json:"command"`           // "prsaga dev", "prsaga serve ledger"
	Listens []string  `json:"listens,omitempty"` // "http http://127.0.0.1:8080", "nats nats://127.0.0.1:4222"
	Since   time.Time `json:"since"`
}

// Me is a Holder for this process, started now.
func Me(command string, listens ...string) Holder {
	host, _ := os.Hostname()
	return Holder{PID: os.Getpid(), Host: host, Command: command, Listens: listens, Since: time.Now().UTC().Truncate(time.Second)}
}

func (h Holder) String() string {
	s := fmt.Sprintf("pid %d", h.PID)
	if h.Host != "" {
		s += " on " + h.Host
	}
	if h.Command != "" {
		s += " (" + h.Command
		if len(h.Listens) > 0 {
			s += ": " + strings.Join(h.Listens, ", ")
		}
		s += ")"
	}
	if !h.Since.IsZero() {
		s += " since " + h.Since.Format(time.RFC3339)
	}
	return s
}

// ErrHeld is matched (errors.Is) by Take's error when another process
// holds a part.
var ErrHeld = errors.New("held by another process")

// HeldError names the parts another process holds and who holds them.
type HeldError struct {
	Dir   string
	Parts []string
	// Holder is what the lock file says; nil when it says nothing
	// readable (the holder died before writing it, or is writing it).
	Holder *Holder
}

func (e *HeldError) Error() string {
	who := "another process"
	if e.Holder != nil {
		who = e.Holder.String()
	}
	return fmt.Sprintf("%s held by %s (%s)", strings.Join(e.Parts, ", "), who, filepath.Join(e.Dir, Dir))
}

func (e *HeldError) Is(target error) bool { return target == ErrHeld }

// Lock is the parts a process holds.
type Lock struct {
	files []*os.File
}

// Take takes every part of the data directory dir without waiting and
// records h in their files. When another process holds any of them it
// takes none and returns one HeldError per holder, joined, each matching
// ErrHeld.
func Take(dir string, parts []Part, h Holder) (*Lock, error) {
	ldir := filepath.Join(dir, Dir)
	if err := os.MkdirAll(ldir, 0o755); err != nil {
		return nil, fmt.Errorf("lock the data directory: %w", err)
	}
	l := &Lock{}
	var held []*HeldError
	for _, p := range parts {
		path := filepath.Join(ldir, p.Name+".lock")
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644) // close-on-exec: no child inherits it
		if err != nil {
			l.Release()
			return nil, fmt.Errorf("lock the data directory: %w", err)
		}
		how := syscall.LOCK_EX
		if p.Shared {
			how = syscall.LOCK_SH
		}
		err = syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if errors.Is(err, syscall.EWOULDBLOCK) {
			holder := readHolder(f)
			_ = f.Close()
			held = addHeld(held, dir, p.Name, holder)
			continue
		}
		if err != nil {
			_ = f.Close()
			l.Release()
			return nil, fmt.Errorf("flock %s: %w", path, err)
		}
		l.files = append(l.files, f)
	}
	if len(held) > 0 {
		l.Release()
		errs := make([]error, len(held))
		for i, e := range held {
			errs[i] = e
		}
		return nil, errors.Join(errs...)
	}
	// Who holds it is for the message of a refused process; failing to say
	// costs only that.
	_ = l.Record(h)
	return l, nil
}

// addHeld adds part, held by holder, to the error of the same holder.
func addHeld(held []*HeldError, dir, part string, holder *Holder) []*HeldError {
	for _, e := range held {
		if (e.Holder == nil && holder == nil) || (e.Holder != nil && holder != nil && e.Holder.PID == holder.PID && e.Holder.Host == holder.Host) {
			e.Parts = append(e.Parts, part)
			return held
		}
	}
	return append(held, &HeldError{Dir: dir, Parts: []string{part}, Holder: holder})
}

// Record writes h into every lock file held, for example once the
// process knows the ports it listens on. The new record is written over
// the old one before the file is cut to its length, so that a reader
// always finds a whole record first (readHolder reads the first JSON
// value).
func (l *Lock) Record(h Holder) error {
	b, err := json.Marshal(h)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	var errs []error
	for _, f := range l.files {
		if _, err := f.WriteAt(b, 0); err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, f.Truncate(int64(len(b))))
	}
	return errors.Join(errs...)
}

// Release lets every part go. Safe to call more than once; the kernel
// does the same when the process dies.
func (l *Lock) Release() {
	if l == nil {
		return
	}
	for _, f := range l.files {
		_ = f.Close() // closing drops the flock
	}
	l.files = nil
}

// readHolder is the record of a lock file; nil when there is none.
func readHolder(f *os.File) *Holder {
	b := make([]byte, 4096)
	n, _ := f.ReadAt(b, 0)
	var h Holder
	if json.NewDecoder(bytes.NewReader(b[:n])).Decode(&h) != nil || h.PID == 0 {
		return nil
	}
	return &h
}

// Holders describes the processes holding a part of the data directory
// dir now, one line per holder naming its parts; empty when none does.
// It takes nothing (a part found free is let go at once).
func Holders(dir string) ([]string, error) {
	names, err := filepath.Glob(filepath.Join(dir, Dir, "*.lock"))
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	var held []*HeldError
	for _, path := range names {
		f, err := os.Open(path)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return nil, err
		}
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if errors.Is(err, syscall.EWOULDBLOCK) {
			held = addHeld(held, dir, strings.TrimSuffix(filepath.Base(path), ".lock"), readHolder(f))
		} else if err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("flock %s: %w", path, err)
		}
		_ = f.Close()
	}
	out := make([]string, len(held))
	for i, e := range held {
		out[i] = e.Error()
	}
	return out, nil
}
