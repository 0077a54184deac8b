package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

// logReader reads the services' JSON log files (<dir>/*.jsonl, rotated
// ones included) for the lines of one run. It remembers where it stopped
// in each file, so that --follow reads only what was appended; a file
// replaced under its name (rotation) is read again from its start. Not
// safe for concurrent use.
type logReader struct {
	dir, id string
	files   map[string]*logFile
}

type logFile struct {
	info os.FileInfo
	off  int64
	tail []byte // a last line not yet ended by a newline
}

func newLogReader(dir, id string) *logReader {
	return &logReader{dir: dir, id: id, files: map[string]*logFile{}}
}

// maxLine bounds one log line; longer ones are skipped.
const maxLine = 4 << 20

// read returns the run's lines appended since the last call. It fails
// when the directory holds no *.jsonl file at all.
func (r *logReader) read() ([]traceEntry, error) {
	names, err := filepath.Glob(filepath.Join(r.dir, "*.jsonl"))
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no *.jsonl files in %s", r.dir)
	}
	var out []traceEntry
	var errs []error
	for _, name := range names {
		es, err := r.readFile(name)
		out = append(out, es...)
		if err != nil {
			errs = append(errs, fmt.Errorf("read %s: %w", name, err))
		}
	}
	return out, errors.Join(errs...)
}

func (r *logReader) readFile(name string) ([]traceEntry, error) {
	f, err := os.Open(name)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil // rotated away since the glob
		}
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	st := r.files[name]
	if st == nil || !os.SameFile(st.info, info) || info.Size() < st.off {
		st = &logFile{}
		r.files[name] = st
	}
	st.info = info
	if info.Size() == st.off {
		return nil, nil
	}
	if _, err := f.Seek(st.off, io.SeekStart); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, info.Size()-st.off))
	if err != nil {
		return nil, err
	}
	st.off += int64(len(data))
	data = append(st.tail, data...)
	st.tail = nil
	needle := []byte(r.id)
	var out []traceEntry
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			if len(data) <= maxLine {
				st.tail = data // the rest comes with the next read
			}
			break
		}
		line := data[:i]
		data = data[i+1:]
		if len(line) > maxLine || !bytes.Contains(line, needle) {
			continue // cheap filter before decoding
		}
		if e, ok := logEntry(line, r.id); ok {
			out = append(out, e)
		}
	}
	return out, nil
}

// logEntries reads every *.jsonl file in dir once and keeps the lines
// whose correlation_id is id. Lines that are not JSON objects are skipped.
func logEntries(dir, id string) ([]traceEntry, error) {
	return newLogReader(dir, id).read()
}

// standardKeys are the log fields shown in their own columns or not at all.
var standardKeys = []string{"time", "level", "msg", "service", "correlation_id", "event_id", "event_type", "pr_id",
	"causation_id", "consumer", "trace_id", "span_id"}

func logEntry(line []byte, id string) (traceEntry, bool) {
	var m map[string]any
	if json.Unmarshal(line, &m) != nil || m["correlation_id"] != id {
		return traceEntry{}, false
	}
	str := func(k string) string { s, _ := m[k].(string); return s }
	t, err := time.Parse(time.RFC3339Nano, str("time"))
	if err != nil {
		return traceEntry{}, false
	}
	var extra []string
	for k, v := range m {
		if slices.Contains(standardKeys, k) {
			continue
		}
		s := fmt.Sprint(v)
		if s == "" {
			continue // an empty field says nothing on a timeline
		}
		if len(s) > 160 {
			s = s[:160] + "…"
		}
		extra = append(extra, k+"="+s)
	}
	sort.Strings(extra)
	what := str("msg")
	if et := str("event_type"); et != "" {
		what += " [" + strings.TrimSuffix(strings.TrimPrefix(et, "prsaga."), ".v1") + "]"
	}
	if len(extra) > 0 {
		what += " " + strings.Join(extra, " ")
	}
	e := traceEntry{Time: t, Service: str("service"), Kind: "log", Level: str("level"), What: what,
		EventID: str("event_id"), EventType: str("event_type"), TraceID: str("trace_id")}
	if str("msg") == "saga_transition" {
		e.ToState = str("to_state")
	}
	return e, true
}
