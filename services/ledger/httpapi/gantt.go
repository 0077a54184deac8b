package httpapi

import (
	"fmt"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/services/ledger"
)

// ganttBar is one visit of a step: from the transition into it to the
// next transition (or now, while in flight).
type ganttBar struct {
	Y, X, W  int
	Label    string // "MERGING · attempt 2"
	Duration string // "12ms in MERGING"
	Class    string // ok | failed | ongoing
	TextX    int
	Attempt  int
}

// ganttRetry links a failed bar to the first bar of the retry it led to.
type ganttRetry struct {
	X1, Y1, X2, Y2 int
	By             string
}

type gantt struct {
	W, H    int
	Bars    []ganttBar
	Retries []ganttRetry
	Span    string
	Start   string
}

// ganttOf lays out the visits of the in-flight states, one row each, in
// order: attempts stack below each other, a failed visit is red, and each
// retry is drawn from the failure to the visit it started.
func ganttOf(ts []ledger.Transition, now time.Time) gantt {
	g := gantt{W: 980}
	if len(ts) == 0 {
		return g
	}
	start := ts[0].At
	end := now
	if last := ts[len(ts)-1]; !last.To.InFlight() {
		end = last.At
	}
	total := end.Sub(start)
	if total <= 0 {
		total = time.Millisecond
	}
	g.Span, g.Start = round(total), start.UTC().Format("15:04:05.000")
	const left, plot, rowH = 220, 600, 26
	x := func(t time.Time) int { return left + int(float64(t.Sub(start))/float64(total)*plot) }
	attempt := 1
	var lastFailed *ganttBar
	retry, retryBy := false, ""
	for i, t := range ts {
		if t.From == contracts.StateMergeFailed && t.To.InFlight() {
			attempt++
			retry, retryBy = true, t.Actor
		}
		if !t.To.InFlight() {
			continue
		}
		stop, class := now, "ongoing"
		if i+1 < len(ts) {
			stop, class = ts[i+1].At, "ok"
			if ts[i+1].To == contracts.StateMergeFailed {
				class = "failed"
			}
		}
		b := ganttBar{Y: 10 + len(g.Bars)*rowH, X: x(t.At), Attempt: attempt, Class: class,
			Label:    fmt.Sprintf("%s · attempt %d", t.To, attempt),
			Duration: fmt.Sprintf("%s in %s", round(stop.Sub(t.At)), t.To)}
		if class == "ongoing" {
			b.Duration += " so far"
		}
		b.W = max(3, x(stop)-b.X)
		b.TextX = b.X + b.W + 6
		if retry && lastFailed != nil {
			by := "retry"
			if retryBy != "" {
				by += " by " + retryBy
			}
			g.Retries = append(g.Retries, ganttRetry{X1: lastFailed.X + lastFailed.W, Y1: lastFailed.Y + 18, X2: b.X, Y2: b.Y + 4, By: by})
		}
		retry = false
		g.Bars = append(g.Bars, b)
		if class == "failed" {
			lastFailed = &g.Bars[len(g.Bars)-1]
		}
	}
	g.H = 20 + len(g.Bars)*rowH
	return g
}
