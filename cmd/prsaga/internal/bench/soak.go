package bench

import (
	"bufio"
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/config"
	"github.com/prsaga/prsaga/platform/telemetry"
)

// The soak (issue 17): many sagas under short retention, the size of every
// store sampled through the run, to see that what retention bounds stops
// growing. Its settings, for what the operator did not set:
const (
	SoakStreamMaxAge  = time.Minute // the stream's MaxAge, and its dedupe window at most
	SoakInboxMargin   = 15 * time.Second
	SoakRetentionSent = 15 * time.Second
	SoakPruneInterval = 5 * time.Second
	// SoakSampleEvery is the default pause between samples.
	SoakSampleEvery = 5 * time.Second
)

// SoakConfig is cfg with the soak's short retention for every setting the
// operator did not give (given reports whether the setting's environment
// variable or flag was set).
func SoakConfig(cfg config.Config, given func(env string) bool) config.Config {
	if !given("PRSAGA_STREAM_MAX_AGE") {
		cfg.StreamMaxAge = SoakStreamMaxAge
	}
	if !given("PRSAGA_DEDUPE_WINDOW") || cfg.DedupeWindow > cfg.StreamMaxAge {
		cfg.DedupeWindow = min(cfg.DedupeWindow, cfg.StreamMaxAge)
	}
	if !given("PRSAGA_RETENTION_INBOX") {
		cfg.RetentionInbox = cfg.StreamMaxAge + SoakInboxMargin
	}
	if !given("PRSAGA_RETENTION_SENT") {
		cfg.RetentionSent = SoakRetentionSent
	}
	if !given("PRSAGA_PRUNE_INTERVAL") {
		cfg.PruneInterval = SoakPruneInterval
	}
	return cfg
}

// SoakSample is the stores' sizes at one moment of the run.
type SoakSample struct {
	AtSeconds float64 `json:"at_seconds"` // since the first publish
	Sagas     int64   `json:"sagas"`      // finished by then
	// Bytes per store: "<service>.sqlite" (the file), "<service>.sqlite-wal",
	// "index" (bleve), "nats" (JetStream's store), "logs", "other".
	Bytes map[string]int64 `json:"bytes"`
	// Rows is prsaga_store_size after each service's last prune round:
	// "<service> inbox_rows", "<service> outbox_rows", "<service> free_bytes".
	Rows map[string]int64 `json:"rows,omitempty"`
}

// sampler samples the run's directory (and the services' metrics) every
// `every` until stopped.
type sampler struct {
	dir   string
	urls  []string // metrics base URLs, one per process
	every time.Duration
	done  func() int64
	start time.Time

	mu      sync.Mutex
	samples []SoakSample
	stopc   chan struct{}
	wg      sync.WaitGroup
}

func startSampler(ctx context.Context, dir string, urls []string, every time.Duration, done func() int64) *sampler {
	s := &sampler{dir: dir, urls: urls, every: every, done: done, start: time.Now(), stopc: make(chan struct{})}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		s.sample(ctx)
		for {
			select {
			case <-ctx.Done():
				return
			case <-s.stopc:
				s.sample(ctx)
				return
			case <-t.C:
				s.sample(ctx)
			}
		}
	}()
	return s
}

// stop takes a last sample and returns them all.
func (s *sampler) stop() []SoakSample {
	close(s.stopc)
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.samples
}

func (s *sampler) sample(ctx context.Context) {
	smp := SoakSample{
		AtSeconds: time.Since(s.start).Seconds(), Sagas: s.done(),
		Bytes: storeBytes(s.dir), Rows: map[string]int64{},
	}
	for _, u := range s.urls {
		for k, v := range storeMetrics(ctx, u) {
			smp.Rows[k] = v
		}
	}
	s.mu.Lock()
	s.samples = append(s.samples, smp)
	s.mu.Unlock()
}

// storeBytes sums the files under dir by store; the repositories are left
// out (their size is git's, reported apart).
func storeBytes(dir string) map[string]int64 {
	out := map[string]int64{}
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // a file removed under the walk (a bleve segment, a WAL)
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() {
			if rel == "repos" {
				return filepath.SkipDir
			}
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		out[storeOf(rel)] += fi.Size()
		return nil
	})
	return out
}

// storeOf names the store a file (path relative to the run's directory)
// belongs to, in both modes' layouts.
func storeOf(rel string) string {
	name := filepath.Base(rel)
	if strings.HasSuffix(name, ".sqlite") || strings.HasSuffix(name, ".sqlite-wal") {
		return name
	}
	parts := strings.Split(filepath.ToSlash(rel), "/")
	for _, p := range []string{"nats", "index", "logs"} {
		if slices.Contains(parts[:len(parts)-1], p) {
			return p
		}
	}
	if strings.HasSuffix(name, ".jsonl") || strings.HasSuffix(name, ".log") {
		return "logs"
	}
	return "other"
}

// storeMetrics reads prsaga_store_size and prsaga_pruned_rows_total from a
// process's /metrics: "<service> <what>" and "<service> pruned_<table>".
// A scrape that fails gives nothing (the sample goes on without it).
func storeMetrics(ctx context.Context, base string) map[string]int64 {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out := map[string]int64{}
	if err := scrapeMetrics(ctx, base, func(line string) {
		name, labels, v, ok := parseMetric(line)
		switch {
		case !ok:
		case name == telemetry.MetricStoreSize:
			out[labels["service"]+" "+labels["what"]] = v
		case name == telemetry.MetricPruned:
			out[labels["service"]+" pruned_"+labels["table"]] += v
		}
	}); err != nil {
		return nil
	}
	return out
}

// scrapeMetrics calls each with every line of base's /metrics (the
// Prometheus text format).
func scrapeMetrics(ctx context.Context, base string, each func(line string)) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s/metrics: %s", base, resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		each(sc.Text())
	}
	return sc.Err()
}

// parseMetric reads one sample line of the Prometheus text format
// (`name{k="v",...} value`); label values here hold no quotes or commas.
func parseMetric(line string) (name string, labels map[string]string, v int64, ok bool) {
	if line == "" || line[0] == '#' {
		return "", nil, 0, false
	}
	open, end := strings.IndexByte(line, '{'), strings.LastIndexByte(line, '}')
	if open < 0 || end < open {
		return "", nil, 0, false
	}
	name, labels = line[:open], map[string]string{}
	for _, kv := range strings.Split(line[open+1:end], ",") {
		k, val, found := strings.Cut(kv, "=")
		if found {
			labels[k] = strings.Trim(val, `"`)
		}
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(line[end+1:]), 64)
	if err != nil {
		return "", nil, 0, false
	}
	return name, labels, int64(f), true
}

// metricsURLs are the distinct base URLs of the run's processes.
func metricsURLs(sys system) []string {
	var urls []string
	for _, svc := range []string{contracts.ServiceValidator, contracts.ServiceMerger, contracts.ServiceNotifier, contracts.ServiceIndexer, contracts.ServiceLedger} {
		if u := sys.URL(svc); u != "" && !slices.Contains(urls, u) {
			urls = append(urls, u)
		}
	}
	return urls
}

// dirBytes is the size of every file under dir.
func dirBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}
