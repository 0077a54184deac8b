package main

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/prsaga/prsaga/platform/telemetry"
)

// deployDir is the repository's deploy/ folder.
var deployDir = filepath.Join("..", "..", "deploy")

// checkQuery parses a PromQL expression and checks that every metric it
// selects is one prsaga registers, and that every label it matches on or
// aggregates by is one of that metric's (or le, for a histogram's
// buckets).
func checkQuery(t *testing.T, where, expr string) {
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
		name, labels := metricOf(vs.Name)
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
				_, labels := metricOf(m)
				found = found || slices.Contains(labels, l) || (l == "le" && telemetry.IsHistogram(m))
			}
			if !found {
				t.Errorf("%s: %q groups by %s, which none of %v has", where, expr, l, metrics)
			}
		}
		return nil
	})
}

// metricOf maps a series name to its metric (a histogram's _bucket, _sum
// and _count to the histogram) and that metric's labels.
func metricOf(series string) (string, []string) {
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

// The alert rules are valid Prometheus rules (the checks `promtool check
// rules` makes: YAML, PromQL, templates, durations) over metrics prsaga
// registers, and cover what an on-call person needs.
func TestDeployAlertRules(t *testing.T) {
	p := parser.NewParser(parser.Options{})
	groups, errs := rulefmt.ParseFile(filepath.Join(deployDir, "prometheus", "alerts.yml"), false, model.UTF8Validation, p,
		slog.New(slog.DiscardHandler))
	for _, err := range errs {
		t.Error(err)
	}
	if len(errs) > 0 {
		return
	}
	covered := map[string]bool{}
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				t.Errorf("group %s: a recording rule %q: only alerts are expected here", g.Name, r.Record)
				continue
			}
			if r.Labels["severity"] == "" || r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("alert %s lacks a severity, summary or description", r.Alert)
			}
			checkQuery(t, "alert "+r.Alert, r.Expr)
			for _, m := range telemetry.MetricNames() {
				if strings.Contains(r.Expr, m) {
					covered[m] = true
				}
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
	var mergeFailures string
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if strings.Contains(r.Expr, telemetry.MetricMergeFailed) {
				mergeFailures = strings.Join(strings.Fields(r.Expr), " ")
			}
		}
	}
	if mergeFailures != "sum(increase(prsaga_saga_merge_failed_total[10m])) > 5" {
		t.Errorf("merge failure alert %q, want more than 5 in 10 minutes", mergeFailures)
	}
}

// The Grafana dashboard is JSON Grafana can import, and every query is
// PromQL over metrics prsaga registers.
func TestDeployGrafanaDashboard(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(deployDir, "grafana", "prsaga-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
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
	if err := json.Unmarshal(b, &d); err != nil {
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
			checkQuery(t, "panel "+p.Title, q)
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
