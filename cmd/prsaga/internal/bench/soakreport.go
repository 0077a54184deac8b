package bench

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/config"
)

// Plateau tolerance: a bounded store plateaus when its peak in the second
// half of the judged window is at most its peak in the first half plus
// this share plus an absolute slack: a WAL grows to its checkpoint (4,000
// pages, 16.5 MB with the frames' headers, where it stays, reused) and a
// bleve segment swings by a few megabytes between merges. A quiet store
// may first fill its WAL in the second half.
const (
	plateauGrowthPct = 10
	plateauSlackByte = 17 << 20
	plateauSlackRows = 200
)

// SoakReport is what a soak run found.
type SoakReport struct {
	StreamMaxAge   string `json:"stream_max_age"`
	RetentionInbox string `json:"retention_inbox"`
	RetentionSent  string `json:"retention_sent"`
	PruneInterval  string `json:"prune_interval"`
	// WarmUpSeconds: from then on every retention window has passed at
	// least once (inbox retention + two prune rounds); the judged window
	// runs from there to the end.
	WarmUpSeconds float64 `json:"warm_up_seconds"`
	// Judged is false when the run was too short to judge: the window
	// after the warm-up is under a third of the run or has under 4 samples.
	Judged bool `json:"judged"`
	// Plateau: every bounded series plateaued (meaningful when Judged).
	Plateau bool          `json:"plateau"`
	Series  []SoakSeries  `json:"series"`
	Samples []SoakSample  `json:"samples"`
	Tables  []SoakDBTable `json:"tables,omitempty"`
	// ReposBytes is the repositories' size before and after the run: git's
	// objects and refs, which every merge adds to.
	ReposBytesBefore int64 `json:"repos_bytes_before"`
	ReposBytesAfter  int64 `json:"repos_bytes_after"`
}

// SoakSeries is one store (file bytes) or one platform table (rows) over
// the run.
type SoakSeries struct {
	Name string `json:"name"`
	// Kind: "bounded" (retention must make it plateau) or "history" (it
	// keeps a row per saga by design: the ledger's sagas and transitions,
	// the merger's journal, the validator's PR locks, the search index).
	Kind  string `json:"kind"`
	Unit  string `json:"unit"` // bytes or rows
	First int64  `json:"first"`
	Peak  int64  `json:"peak"`
	Last  int64  `json:"last"`
	// PeakFirstHalf and PeakSecondHalf are the peaks in the two halves of
	// the judged window.
	PeakFirstHalf  int64 `json:"peak_first_half"`
	PeakSecondHalf int64 `json:"peak_second_half"`
	// PerSagaWarmUp and PerSagaJudged are the growth per finished saga
	// before and after the warm-up.
	PerSagaWarmUp float64 `json:"per_saga_warm_up"`
	PerSagaJudged float64 `json:"per_saga_judged"`
	Plateau       bool    `json:"plateau"`
}

// SoakDBTable is one table's (with its indexes) bytes in one database at
// the end of the run, from SQLite's dbstat.
type SoakDBTable struct {
	DB    string `json:"db"`
	Table string `json:"table"` // "(free pages)" for the free list
	Bytes int64  `json:"bytes"`
}

// soakReport judges the samples of a run with the configuration cfg, once
// the services stopped: the tables' bytes and the repositories' are read
// then.
func soakReport(ctx context.Context, o Options, cfg config.Config, samples []SoakSample, reposDir string, reposBefore int64) (*SoakReport, error) {
	warmUp := max(cfg.RetentionInbox, cfg.RetentionSent) + 2*cfg.PruneInterval
	r := &SoakReport{
		StreamMaxAge: cfg.StreamMaxAge.String(), RetentionInbox: cfg.RetentionInbox.String(),
		RetentionSent: cfg.RetentionSent.String(), PruneInterval: cfg.PruneInterval.String(),
		WarmUpSeconds: warmUp.Seconds(), Samples: samples,
		ReposBytesBefore: reposBefore, ReposBytesAfter: dirBytes(reposDir),
	}
	r.Series, r.Judged, r.Plateau = judgeSoak(samples, warmUp, o.Watchers)
	tables, err := tableBytes(ctx, o.Dir)
	if err != nil {
		return nil, fmt.Errorf("soak: %w", err)
	}
	r.Tables = tables
	return r, nil
}

// historyStore reports whether a store keeps a row per saga by design.
func historyStore(name string, watchers int) bool {
	switch name {
	case contracts.ServiceLedger, contracts.ServiceMerger, contracts.ServiceValidator, "index", "logs":
		return true
	case contracts.ServiceNotifier:
		return watchers > 0 // a delivery row per watcher and saga
	}
	return false
}

// judgeSoak builds the report's series and verdict from the samples.
func judgeSoak(samples []SoakSample, warmUp time.Duration, watchers int) (series []SoakSeries, judged, plateau bool) {
	if len(samples) == 0 {
		return nil, false, false
	}
	end := samples[len(samples)-1].AtSeconds
	w0 := warmUp.Seconds()
	var window []SoakSample
	for _, s := range samples {
		if s.AtSeconds >= w0 {
			window = append(window, s)
		}
	}
	judged = len(window) >= 4 && end-w0 >= end/3
	plateau = true
	add := func(name, kind, unit string, get func(SoakSample) int64) {
		s := SoakSeries{Name: name, Kind: kind, Unit: unit, First: get(samples[0]), Last: get(samples[len(samples)-1])}
		for _, smp := range samples {
			s.Peak = max(s.Peak, get(smp))
		}
		if len(window) > 0 {
			mid := (window[0].AtSeconds + end) / 2
			for _, smp := range window {
				if smp.AtSeconds < mid {
					s.PeakFirstHalf = max(s.PeakFirstHalf, get(smp))
				} else {
					s.PeakSecondHalf = max(s.PeakSecondHalf, get(smp))
				}
			}
			s.PerSagaWarmUp = perSaga(samples[0], window[0], get)
			s.PerSagaJudged = perSaga(window[0], samples[len(samples)-1], get)
		}
		slack := int64(plateauSlackByte)
		if unit == "rows" {
			slack = plateauSlackRows
		}
		s.Plateau = s.PeakSecondHalf <= s.PeakFirstHalf+s.PeakFirstHalf*plateauGrowthPct/100+slack
		if kind == "bounded" && judged && !s.Plateau {
			plateau = false
		}
		series = append(series, s)
	}
	for _, name := range storeNames(samples) {
		kind := "bounded"
		if historyStore(name, watchers) {
			kind = "history"
		}
		add(name, kind, "bytes", func(s SoakSample) int64 {
			return s.Bytes[name+".sqlite"] + s.Bytes[name+".sqlite-wal"] + s.Bytes[name]
		})
	}
	for _, name := range rowNames(samples) {
		add(name, "bounded", "rows", func(s SoakSample) int64 { return s.Rows[name] })
	}
	return series, judged, plateau
}

func perSaga(a, b SoakSample, get func(SoakSample) int64) float64 {
	if b.Sagas <= a.Sagas {
		return 0
	}
	return float64(get(b)-get(a)) / float64(b.Sagas-a.Sagas)
}

// storeNames are the stores seen in the samples, the databases by
// service name (file and WAL together), then index, nats, logs, other.
func storeNames(samples []SoakSample) []string {
	seen := map[string]bool{}
	for _, s := range samples {
		for k, v := range s.Bytes {
			if v > 0 {
				seen[strings.TrimSuffix(strings.TrimSuffix(k, "-wal"), ".sqlite")] = true
			}
		}
	}
	var dbs, rest []string
	for k := range seen {
		if slices.Contains([]string{"index", "nats", "logs", "other"}, k) {
			rest = append(rest, k)
		} else {
			dbs = append(dbs, k)
		}
	}
	sort.Strings(dbs)
	sort.Strings(rest)
	return append(dbs, rest...)
}

// rowNames are the platform tables' row counts in the samples.
func rowNames(samples []SoakSample) []string {
	seen := map[string]bool{}
	for _, s := range samples {
		for k := range s.Rows {
			if strings.HasSuffix(k, " inbox_rows") || strings.HasSuffix(k, " outbox_rows") {
				seen[k] = true
			}
		}
	}
	names := make([]string, 0, len(seen))
	for k := range seen {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// Format writes the report: the settings, a table of samples (at most
// about 25 rows), each series' figures, the tables' bytes at the end and
// the verdict.
func (r *SoakReport) Format(w io.Writer) {
	fmt.Fprintf(w, "soak: stream max age %s, inbox retention %s, sent retention %s, prune interval %s; warm-up %.0fs\n",
		r.StreamMaxAge, r.RetentionInbox, r.RetentionSent, r.PruneInterval, r.WarmUpSeconds)
	var bytesSeries []SoakSeries
	for _, s := range r.Series {
		if s.Unit == "bytes" {
			bytesSeries = append(bytesSeries, s)
		}
	}
	fmt.Fprintf(w, "%8s %8s", "t (s)", "sagas")
	for _, s := range bytesSeries {
		fmt.Fprintf(w, " %10s", s.Name)
	}
	fmt.Fprintln(w, "   (MB; a database is its file + WAL)")
	step := max(1, len(r.Samples)/24)
	for i, smp := range r.Samples {
		if i%step != 0 && i != len(r.Samples)-1 {
			continue
		}
		fmt.Fprintf(w, "%8.0f %8d", smp.AtSeconds, smp.Sagas)
		for _, s := range bytesSeries {
			fmt.Fprintf(w, " %10.2f", mbytes(smp.Bytes[s.Name+".sqlite"]+smp.Bytes[s.Name+".sqlite-wal"]+smp.Bytes[s.Name]))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "%-26s %-8s %12s %12s %12s %12s %12s %12s %12s  %s\n",
		"series", "kind", "first", "peak", "last", "peak 1st½", "peak 2nd½", "/saga warm", "/saga after", "verdict")
	for _, s := range r.Series {
		verdict := "plateau"
		switch {
		case s.Kind == "history":
			verdict = "grows with history by design"
		case !r.Judged:
			verdict = "not judged (run too short)"
		case !s.Plateau:
			verdict = "GROWS"
		}
		name := s.Name
		if s.Unit == "rows" {
			name += " (rows)"
		}
		fmt.Fprintf(w, "%-26s %-8s %12s %12s %12s %12s %12s %12.0f %12.0f  %s\n", name, s.Kind,
			amount(s.First, s.Unit), amount(s.Peak, s.Unit), amount(s.Last, s.Unit),
			amount(s.PeakFirstHalf, s.Unit), amount(s.PeakSecondHalf, s.Unit), s.PerSagaWarmUp, s.PerSagaJudged, verdict)
	}
	if len(r.Tables) > 0 {
		fmt.Fprintln(w, "tables at the end (bytes with their indexes, dbstat):")
		for _, t := range r.Tables {
			fmt.Fprintf(w, "  %-10s %-22s %12s\n", t.DB, t.Table, amount(t.Bytes, "bytes"))
		}
	}
	fmt.Fprintf(w, "repositories (git): %s before, %s after\n", amount(r.ReposBytesBefore, "bytes"), amount(r.ReposBytesAfter, "bytes"))
	fmt.Fprintf(w, "soak verdict: %s\n", r.Verdict())
}

// Verdict is the one-line verdict.
func (r *SoakReport) Verdict() string {
	switch {
	case !r.Judged:
		return "not judged: the run after the warm-up is too short (more sagas, or a shorter retention)"
	case r.Plateau:
		return fmt.Sprintf("every bounded store and platform table plateaued (second-half peak within %d%% + slack of the first half's)", plateauGrowthPct)
	}
	var grew []string
	for _, s := range r.Series {
		if s.Kind == "bounded" && !s.Plateau {
			grew = append(grew, s.Name)
		}
	}
	return "GROWS: " + strings.Join(grew, ", ")
}

func amount(n int64, unit string) string {
	if unit == "rows" {
		return fmt.Sprint(n)
	}
	return fmt.Sprintf("%.2f MB", mbytes(n))
}

func mbytes(n int64) float64 { return float64(n) / (1 << 20) }
