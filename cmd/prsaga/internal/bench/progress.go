package bench

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// progress draws a one-line bar on w (stderr) every 250ms until stopped.
type progress struct {
	w    io.Writer
	stop chan struct{}
	wg   sync.WaitGroup
}

func startProgress(w io.Writer, label string, total int, d *driver) *progress {
	p := &progress{w: w, stop: make(chan struct{})}
	if w == nil {
		return p
	}
	start := time.Now()
	draw := func() {
		done := int(d.merged.Load() + d.failed.Load())
		const width = 30
		fill := width * done / total
		rate := float64(done) / time.Since(start).Seconds()
		fmt.Fprintf(w, "\r%s [%s%s] %d/%d  %.0f sagas/s  in flight %d  failed %d ",
			label, strings.Repeat("=", fill), strings.Repeat(" ", width-fill), done, total, rate,
			int(d.published.Load())-done, d.failed.Load())
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				draw()
				fmt.Fprintln(w)
				return
			case <-t.C:
				draw()
			}
		}
	}()
	return p
}

func (p *progress) Stop() {
	close(p.stop)
	p.wg.Wait()
}

// note writes one phase line.
func note(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, "bench: "+format+"\n", args...)
	}
}
