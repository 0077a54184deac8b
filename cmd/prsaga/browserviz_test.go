package main

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// eval runs a read-only expression in the page (DevTools, not the page's
// scripts: the dashboard itself runs none).
func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// checkOverview: the pipeline picture, the charts and the search form
// are drawn with the stack's real counts (one saga MERGED, one failed at
// NOTIFYING with webhook_failed), with a visible size.
func checkOverview(t *testing.T, ctx context.Context) {
	t.Helper()
	pipe := eval[string](t, ctx, `document.querySelector('#pipeline').textContent`)
	for _, want := range []string{"VALIDATING", "MERGING", "NOTIFYING", "INDEXING", "MERGED", "failed here: 1", "webhook_failed ×1"} {
		if !strings.Contains(pipe, want) {
			t.Errorf("pipeline picture lacks %q: %q", want, pipe)
		}
	}
	if w := eval[float64](t, ctx, `document.querySelector('#pipeline').getBoundingClientRect().width`); w < 600 {
		t.Errorf("pipeline picture is %.0f px wide", w)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('#chart-flow rect.bar-ok').length`); n < 1 {
		t.Error("the finished chart has no bar for the merged saga")
	}
	if h := eval[float64](t, ctx, `Math.max(...[...document.querySelectorAll('#chart-flow rect.bar-fail')].map(r => r.getBoundingClientRect().height))`); !(h > 0) {
		t.Errorf("the failed saga's bar is %.1f px high", h)
	}
	if w := eval[float64](t, ctx, `Math.max(...[...document.querySelectorAll('#chart-steps rect.bar-p99')].map(r => r.getBoundingClientRect().width))`); !(w > 0) {
		t.Errorf("the step durations chart draws nothing (widest bar %.1f px)", w)
	}
	if a := eval[string](t, ctx, `document.querySelector('#search').getAttribute('action')`); a != "/api/v1/search" {
		t.Errorf("search form posts to %q", a)
	}
}

// checkSagaPage: the Gantt timeline has a red bar for the failed step,
// the PR's fields and the trace command are there, and the page says to
// fix the receiver first.
func checkSagaPage(t *testing.T, ctx context.Context, correlationID string) {
	t.Helper()
	if w := eval[float64](t, ctx, `document.querySelector('#gantt rect.bar-gantt.failed').getBoundingClientRect().width`); !(w > 0) {
		t.Errorf("the failed step's Gantt bar is %.1f px wide", w)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('#gantt rect.bar-gantt').length`); n < 3 {
		t.Errorf("the Gantt timeline has %d bars, want VALIDATING, MERGING, NOTIFYING", n)
	}
	if fix := text(t, ctx, "#fix-receiver"); !strings.Contains(fix, "Fix the receiver, then retry") {
		t.Errorf("fix line: %q", fix)
	}
	if cmd := text(t, ctx, "#trace-cmd"); cmd != "prsaga trace "+correlationID {
		t.Errorf("trace command %q", cmd)
	}
	if f := text(t, ctx, "#pr-fields"); !strings.Contains(f, "feature/hello") || !strings.Contains(f, "merge") {
		t.Errorf("PR fields: %q", f)
	}
	if d := text(t, ctx, "#deliveries"); !strings.Contains(d, "failed") {
		t.Errorf("deliveries: %q", d)
	}
}
