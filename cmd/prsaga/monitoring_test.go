package main

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"text/template"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"

	"github.com/prsaga/prsaga/platform/telemetry"
)

// monitoringDir is where deploy/ keeps the Prometheus and Grafana files.
var monitoringDir = filepath.Join("..", "..", "deploy")

// checkPromQL parses a PromQL expression and checks that every metric it
// selects is one prsaga registers, and that every label it matches on or
// aggregates by is one of that metric's (or le, for a histogram's
// buckets).
func checkPromQL(t *testing.T, where, expr string) {
	t.Helper()
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		t.Errorf("%s: %q does not parse: %v", where, expr, err)
		return
	}
	var metrics []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name, labels := promMetricOf(vs.Name)
		if telemetry.MetricLabels(name) == nil || (name != vs.Name && !telemetry.IsHistogram(name)) {
			t.Errorf("%s: %q selects %s, which prsaga does not register", where, expr, vs.Name)
			return nil
		}
		metrics = append(metrics, name)
		for _, m := range vs.LabelMatchers {
			if m.Name != model.MetricNameLabel && !slices.Contains(labels, m.Name) {
				t.Errorf("%s: %q matches on label %s, which %s does not have", where, expr, m.Name, vs.Name)
			}
		}
		return nil
	})
	if len(metrics) == 0 {
		t.Errorf("%s: %q selects no prsaga metric", where, expr)
	}
	// Labels grouped by must belong to some selected metric.
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		ag, ok := n.(*parser.AggregateExpr)
		if !ok {
			return nil
		}
		for _, l := range ag.Grouping {
			found := false
			for _, m := range metrics {
				_, labels := promMetricOf(m)
				found = found || slices.Contains(labels, l) || (l == "le" && telemetry.IsHistogram(m))
			}
			if !found {
				t.Errorf("%s: %q groups by %s, which none of %v has", where, expr, l, metrics)
			}
		}
		return nil
	})
}

// promMetricOf maps a series name to its metric (a histogram's _bucket, _sum
// and _count to the histogram) and that metric's labels.
func promMetricOf(series string) (string, []string) {
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(series, suffix); ok && telemetry.IsHistogram(base) {
			labels := telemetry.MetricLabels(base)
			if suffix == "_bucket" {
				labels = append(labels, "le")
			}
			return base, labels
		}
	}
	return series, telemetry.MetricLabels(series)
}

// ruleFile is Prometheus' rule file format (what `promtool check rules`
// reads); decoding it strictly refuses unknown fields.
type ruleFile struct {
	Groups []struct {
		Name     string `yaml:"name"`
		Interval string `yaml:"interval"`
		Rules    []struct {
			Alert         string            `yaml:"alert"`
			Record        string            `yaml:"record"`
			Expr          string            `yaml:"expr"`
			For           string            `yaml:"for"`
			KeepFiringFor string            `yaml:"keep_firing_for"`
			Labels        map[string]string `yaml:"labels"`
			Annotations   map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// promTemplateFuncs are the functions Prometheus gives alert templates
// (stubs: only parsing is checked).
var promTemplateFuncs = template.FuncMap{}

func init() {
	for _, name := range []string{"query", "first", "label", "value", "strvalue", "args", "reReplaceAll", "safeHtml", "match",
		"title", "toUpper", "toLower", "graphLink", "tableLink", "sortByLabel", "humanize", "humanize1024",
		"humanizeDuration", "humanizePercentage", "humanizeTimestamp", "toTime", "toDuration", "pathPrefix",
		"externalURL", "parseDuration", "stripPort", "stripDomain", "urlQueryEscape", "tmpl", "now"} {
		promTemplateFuncs[name] = func(...any) any { return nil }
	}
}

// The alert rules are valid Prometheus rules — the checks `promtool check
// rules` makes: strict YAML, PromQL, durations, label names, templates —
// over metrics and labels prsaga registers, and cover what an on-call
// person needs.
func TestMonitoringAlertRules(t *testing.T) {
	var rf ruleFile
	dec := yaml.NewDecoder(strings.NewReader(readFile(t, filepath.Join(monitoringDir, "prometheus", "alerts.yml"))))
	dec.KnownFields(true)
	if err := dec.Decode(&rf); err != nil {
		t.Fatalf("alerts.yml: %v", err)
	}
	if len(rf.Groups) == 0 {
		t.Fatal("alerts.yml has no rule group")
	}
	covered := map[string]bool{}
	names := map[string]bool{}
	var mergeFailures string
	for _, g := range rf.Groups {
		if g.Name == "" || names["group "+g.Name] {
			t.Errorf("group name %q is empty or repeated", g.Name)
		}
		names["group "+g.Name] = true
		for _, r := range g.Rules {
			if r.Alert == "" || r.Record != "" {
				t.Errorf("group %s: rule %q/%q: only alerts are expected here", g.Name, r.Alert, r.Record)
				continue
			}
			if !model.LabelName(r.Alert).IsValidLegacy() || names[r.Alert] {
				t.Errorf("alert name %q is invalid or repeated", r.Alert)
			}
			names[r.Alert] = true
			for _, d := range []string{r.For, r.KeepFiringFor} {
				if _, err := model.ParseDuration(d); d != "" && err != nil {
					t.Errorf("alert %s: duration %q: %v", r.Alert, d, err)
				}
			}
			if r.Labels["severity"] == "" || r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("alert %s lacks a severity, summary or description", r.Alert)
			}
			for k, v := range mergeMaps(r.Labels, r.Annotations) {
				if !model.LabelName(k).IsValidLegacy() {
					t.Errorf("alert %s: label or annotation name %q is invalid", r.Alert, k)
				}
				// Prometheus defines these variables before expanding a template.
				def := "{{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}{{$value := .Value}}"
				if _, err := template.New(k).Funcs(promTemplateFuncs).Option("missingkey=zero").Parse(def + v); err != nil {
					t.Errorf("alert %s: template %s: %v", r.Alert, k, err)
				}
			}
			checkPromQL(t, "alert "+r.Alert, r.Expr)
			for _, m := range telemetry.MetricNames() {
				if strings.Contains(r.Expr, m) {
					covered[m] = true
				}
			}
			if strings.Contains(r.Expr, telemetry.MetricMergeFailed) {
				mergeFailures = strings.Join(strings.Fields(r.Expr), " ")
			}
		}
	}
	// The four alerts: merge failures > 5 in 10 minutes, sagas
	// stuck, outbox oldest age, DLQ growth.
	for _, m := range []string{telemetry.MetricMergeFailed, telemetry.MetricInFlightOldest, telemetry.MetricOutboxOldest, telemetry.MetricDLQ} {
		if !covered[m] {
			t.Errorf("no alert watches %s", m)
		}
	}
	if mergeFailures != "sum(increase(prsaga_saga_merge_failed_total[10m])) > 5" {
		t.Errorf("merge failure alert %q, want more than 5 in 10 minutes", mergeFailures)
	}
}

func mergeMaps(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// The Grafana dashboard is JSON Grafana can import, and every query is
// PromQL over metrics prsaga registers.
func TestMonitoringGrafanaDashboard(t *testing.T) {
	b := readFile(t, filepath.Join(monitoringDir, "grafana", "prsaga-dashboard.json"))
	type target struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	}
	type panel struct {
		ID      int      `json:"id"`
		Type    string   `json:"type"`
		Title   string   `json:"title"`
		Targets []target `json:"targets"`
		GridPos struct {
			X, Y, W, H int
		} `json:"gridPos"`
	}
	var d struct {
		UID           string  `json:"uid"`
		Title         string  `json:"title"`
		SchemaVersion int     `json:"schemaVersion"`
		Panels        []panel `json:"panels"`
	}
	if err := json.Unmarshal([]byte(b), &d); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	if d.UID == "" || d.Title == "" || d.SchemaVersion == 0 || len(d.Panels) == 0 {
		t.Fatalf("dashboard lacks uid, title, schemaVersion or panels")
	}
	// Grafana's interval variables, as Grafana would expand them.
	expand := strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "6h")
	ids := map[int]bool{}
	used := map[string]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 || p.GridPos.W == 0 || p.GridPos.H == 0 {
			t.Errorf("panel %q has no query or no size", p.Title)
		}
		for _, tg := range p.Targets {
			q := expand.Replace(tg.Expr)
			if strings.Contains(q, "$") {
				t.Errorf("panel %q: %q uses a variable this test does not know", p.Title, tg.Expr)
				continue
			}
			checkPromQL(t, "panel "+p.Title, q)
			for _, m := range telemetry.MetricNames() {
				used[m] = used[m] || strings.Contains(q, m)
			}
		}
	}
	for _, m := range telemetry.MetricNames() {
		if !used[m] {
			t.Errorf("no panel shows %s", m)
		}
	}
}
