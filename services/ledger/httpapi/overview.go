package httpapi

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/services/ledger"
)

// The dashboard's picture of the saga and its charts: drawn on the server
// as inline SVG (the page runs no script and fetches nothing else), from
// bounded reads only — the per-state counts the store keeps, one page of
// the latest failed sagas (an index range), and the transition window
// Stats already reads.

// failureSample bounds the failed sagas read to split failures by reason.
const failureSample = ledger.MaxLimit

// pipeBox is one box of the pipeline picture.
type pipeBox struct {
	X, Y, W, H int
	Label      string
	Count      int
	Href       string
	Class      string // step | done | fail
	On         bool
	Lines      []svgText // failure reasons with their counts
}

type svgText struct {
	X, Y int
	Text string
}

type pipeArrow struct{ X1, Y1, X2, Y2 int }

type pipeline struct {
	W, H      int
	Boxes     []pipeBox
	Arrows    []pipeArrow
	FailLinks []pipeArrow
	Sample    int // failed sagas the reasons were counted from
	Failed    int // all failed sagas
}

// chartBar is one bucket of the finished/failed chart.
type chartBar struct {
	X, W             int
	OkY, OkH         int
	FailY, FailH     int
	Finished, Failed int
	From             string
}

type chart struct {
	W, H, Base     int
	Bars           []chartBar
	Max            int
	Bucket         string
	Range          string
	Finished, Fail int
	Spike          string // the bucket with the most failures, when any
	Hour, Day      string // hrefs
}

// durBar is one step of the durations chart.
type durBar struct {
	Y             int
	Label         string
	P50W, P99W    int
	P50, P99      string
	Count         int
	LabelX, TextX int
}

type durChart struct {
	W, H  int
	Bars  []durBar
	Scale string
}

type overview struct {
	Pipe   pipeline
	Flow   chart
	Steps  durChart
	Window string
}

func (a *API) overview(ctx context.Context, st ledger.Stats, on contracts.State, rng string, now time.Time) (overview, error) {
	failed, err := a.Sagas.List(ctx, ledger.Filter{State: contracts.StateMergeFailed, Limit: failureSample})
	if err != nil {
		return overview{}, err
	}
	ov := overview{Pipe: pipelineOf(st.States, failed.Sagas, on)}
	span, bucket := time.Hour, time.Minute
	if rng == "day" {
		span, bucket = 24*time.Hour, 15*time.Minute
	} else {
		rng = "hour"
	}
	since := now.Add(-span)
	ov.Flow = flowChart(st.Recent, since, now, bucket, rng)
	var rows []ledger.StepRow
	for _, r := range st.Recent {
		if !r.At.Before(since) {
			rows = append(rows, r)
		}
	}
	ov.Steps = durationsChart(ledger.StepDurations(rows))
	ov.Window = fmt.Sprintf("From the ledger's most recent %d transitions", st.Window.Transitions)
	if !st.Window.Oldest.IsZero() {
		ov.Window += " (since " + st.Window.Oldest.UTC().Format("2006-01-02 15:04:05 UTC") + ")"
	}
	if st.Window.Transitions >= st.Window.Limit && st.Window.Oldest.After(since) {
		ov.Window += fmt.Sprintf(": the window holds at most %d transitions, so the chart starts there", st.Window.Limit)
	}
	return ov, nil
}

func pipelineOf(counts map[contracts.State]int, failed []ledger.Saga, on contracts.State) pipeline {
	p := pipeline{W: 980, H: 230, Sample: len(failed), Failed: counts[contracts.StateMergeFailed]}
	byStep := map[contracts.State]map[string]int{}
	for _, s := range failed {
		code, _, _ := strings.Cut(s.LastError, ":")
		if code == "" || strings.ContainsAny(code, " \n") {
			code = "other"
		}
		if s.TimedOut {
			code = "timed_out"
		}
		if byStep[s.FailedStep] == nil {
			byStep[s.FailedStep] = map[string]int{}
		}
		byStep[s.FailedStep][code]++
	}
	states := append(append([]contracts.State{}, contracts.Steps...), contracts.StateMerged)
	const w, h, gap, top = 160, 64, 40, 20
	for i, s := range states {
		x := 10 + i*(w+gap)
		class := "step"
		if s == contracts.StateMerged {
			class = "done"
		}
		p.Boxes = append(p.Boxes, pipeBox{X: x, Y: top, W: w, H: h, Label: string(s), Count: counts[s],
			Href: "/?state=" + string(s), Class: class, On: on == s})
		if i > 0 {
			p.Arrows = append(p.Arrows, pipeArrow{X1: x - gap + 2, Y1: top + h/2, X2: x - 6, Y2: top + h/2})
		}
		reasons := byStep[s]
		if len(reasons) == 0 || s == contracts.StateMerged {
			continue
		}
		type rc struct {
			code string
			n    int
		}
		var list []rc
		total := 0
		for c, n := range reasons {
			list = append(list, rc{c, n})
			total += n
		}
		sort.Slice(list, func(i, j int) bool {
			return list[i].n > list[j].n || list[i].n == list[j].n && list[i].code < list[j].code
		})
		// A branch lists the sagas that failed at its step, where they can be
		// filtered further and retried together (the bulk retry page).
		box := pipeBox{X: x, Y: 140, W: w, H: 24 + 16*min(len(list), 4), Label: "failed", Count: total,
			Href: "/failed?step=" + url.QueryEscape(string(s)), Class: "fail", On: on == contracts.StateMergeFailed}
		for i, r := range list {
			if i == 4 {
				break
			}
			box.Lines = append(box.Lines, svgText{X: x + 10, Y: 140 + 38 + 16*i, Text: fmt.Sprintf("%s ×%d", r.code, r.n)})
		}
		p.Boxes = append(p.Boxes, box)
		p.FailLinks = append(p.FailLinks, pipeArrow{X1: x + w/2, Y1: top + h, X2: x + w/2, Y2: 134})
	}
	return p
}

func flowChart(recent []ledger.StepRow, since, now time.Time, bucket time.Duration, rng string) chart {
	n := int(now.Sub(since) / bucket)
	c := chart{W: 980, H: 170, Base: 140, Range: rng, Hour: "/?range=hour", Day: "/?range=day"}
	c.Bucket = "per minute"
	if bucket != time.Minute {
		c.Bucket = "per " + strings.TrimSuffix(bucket.String(), "0s")
	}
	ok, bad := make([]int, n), make([]int, n)
	for _, r := range recent {
		if r.At.Before(since) {
			continue
		}
		// A transition stamped a moment after now was read (clocks are
		// read before the query) belongs to the last bucket.
		i := min(int(r.At.Sub(since)/bucket), n-1)
		switch r.To {
		case contracts.StateMerged:
			ok[i]++
			c.Finished++
		case contracts.StateMergeFailed:
			bad[i]++
			c.Fail++
		}
	}
	c.Max = 1
	worst := -1
	for i := range n {
		c.Max = max(c.Max, ok[i]+bad[i])
		if bad[i] > 0 && (worst < 0 || bad[i] > bad[worst]) {
			worst = i
		}
	}
	const left, plot = 40, 930
	bw := plot / n
	for i := range n {
		okH := ok[i] * 120 / c.Max
		failH := bad[i] * 120 / c.Max
		if ok[i] > 0 && okH == 0 {
			okH = 1
		}
		if bad[i] > 0 && failH < 2 {
			failH = 2
		}
		c.Bars = append(c.Bars, chartBar{X: left + i*bw, W: max(1, bw-1), OkY: c.Base - okH, OkH: okH,
			FailY: c.Base - okH - failH, FailH: failH, Finished: ok[i], Failed: bad[i],
			From: since.Add(time.Duration(i) * bucket).UTC().Format("15:04")})
	}
	if worst >= 0 {
		c.Spike = fmt.Sprintf("most failures: %d at %s UTC", bad[worst], since.Add(time.Duration(worst)*bucket).UTC().Format("15:04"))
	}
	return c
}

func durationsChart(steps map[contracts.State]ledger.StepStats) durChart {
	d := durChart{W: 980}
	var maxMs int64 = 1
	for _, s := range contracts.Steps {
		maxMs = max(maxMs, steps[s].P99Ms)
	}
	const labelW, plot = 130, 560
	for i, s := range contracts.Steps {
		ss := steps[s]
		b := durBar{Y: 10 + i*34, Label: string(s), Count: ss.Count, LabelX: 0,
			P50: (time.Duration(ss.P50Ms) * time.Millisecond).String(), P99: (time.Duration(ss.P99Ms) * time.Millisecond).String()}
		b.P50W = int(ss.P50Ms * plot / maxMs)
		b.P99W = int(ss.P99Ms * plot / maxMs)
		if ss.Count > 0 {
			b.P50W, b.P99W = max(b.P50W, 2), max(b.P99W, 2)
		}
		b.TextX = labelW + b.P99W + 8
		d.Bars = append(d.Bars, b)
	}
	d.H = 10 + len(contracts.Steps)*34
	d.Scale = (time.Duration(maxMs) * time.Millisecond).String()
	return d
}
