package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/prsaga/prsaga/cmd/prsaga/internal/client"
	"github.com/prsaga/prsaga/contracts"
)

// A webhook receiver was down: several sagas failed at NOTIFYING, and one
// failed at VALIDATING (red CI). In the browser the operator opens the
// failed list from the dashboard, filters it by step, presses "Retry
// these…", reads the dry run (nothing has changed in the ledger yet),
// confirms, and follows the job's page until it finished: every saga
// failed at NOTIFYING ends MERGED, retried exactly once; the other stays
// failed.
func TestDashboardBulkRetryInBrowser(t *testing.T) {
	const prs = 5
	ctx := browser(t, 3*time.Minute)

	// prs+1 branches: the last one fails at VALIDATING (red CI).
	st, repo := startNotifierDown(t, prs+1)
	c := client.New(st.URL, "")
	var failing []string
	for i := 1; i <= prs; i++ {
		head := repo.SHA[fmt.Sprint(i)]
		setCI(t, c, "acme/widgets", head, "success")
		mustMerge(t, c, request("acme/widgets", i, fmt.Sprintf("pr/%d", i), head))
		failing = append(failing, contracts.PRID("acme/widgets", i))
	}
	red := contracts.PRID("acme/widgets", prs+1)
	setCI(t, c, "acme/widgets", repo.SHA[fmt.Sprint(prs+1)], "failure")
	mustMerge(t, c, request("acme/widgets", prs+1, fmt.Sprintf("pr/%d", prs+1), repo.SHA[fmt.Sprint(prs+1)]))
	for _, pr := range failing {
		if s := waitState(t, c, pr, contracts.StateMergeFailed, 1); s.FailedStep != contracts.StateNotifying || !s.Merged {
			t.Fatalf("setup: %+v, want merged and failed at NOTIFYING", s)
		}
	}
	waitState(t, c, red, contracts.StateMergeFailed, 1)

	do(t, ctx, "load the dashboard's failed list", chromedp.Navigate(st.URL+"/?state=MERGE_FAILED"), chromedp.WaitVisible(chromedp.CSS("#failed-link")))
	do(t, ctx, "open the failed sagas", chromedp.Click(chromedp.CSS("#failed-link")), chromedp.WaitVisible(chromedp.CSS("#bulk-filter")))
	if table := text(t, ctx, "#failed"); !strings.Contains(table, red) {
		t.Fatalf("unfiltered failed list lacks %s: %q", red, table)
	}
	do(t, ctx, "filter by step",
		chromedp.SetValue(chromedp.CSS("#f-step"), "NOTIFYING"),
		chromedp.Click(chromedp.CSS("#f-apply")),
		chromedp.WaitReady(chromedp.CSS(`#f-step option[value="NOTIFYING"][selected]`)))
	table := text(t, ctx, "#failed")
	for _, pr := range failing {
		if !strings.Contains(table, pr) {
			t.Fatalf("failed list by step lacks %s: %q", pr, table)
		}
	}
	if strings.Contains(table, red) {
		t.Fatalf("failed list by NOTIFYING lists %s (failed at VALIDATING): %q", red, table)
	}

	do(t, ctx, "press retry these", chromedp.Click(chromedp.CSS("#retry-these")), chromedp.WaitVisible(chromedp.CSS("#dry-run")))
	if n := eval[int](t, ctx, `document.querySelectorAll('#dry-run tr.outcome-would_replay').length`); n != prs {
		t.Fatalf("the dry run lists %d sagas that would be replayed, want %d: %q", n, prs, text(t, ctx, "#dry-run"))
	}
	if dry := text(t, ctx, "#dry-run"); strings.Contains(dry, red) || !strings.Contains(dry, "replays "+contracts.TypeMerged+" as attempt 2") {
		t.Fatalf("dry run: %q", dry)
	}
	for _, s := range allSagas(t, c) {
		if s.State != contracts.StateMergeFailed || s.Attempts != 1 {
			t.Fatalf("after the dry run %s is %s (attempt %d): the dry run changed the ledger", s.PRID, s.State, s.Attempts)
		}
	}
	screenshot(t, ctx, "dashboard-bulk-dryrun.png")

	do(t, ctx, "confirm", chromedp.Click(chromedp.CSS("#confirm")), chromedp.WaitVisible(chromedp.CSS("#job-progress")))
	deadline := time.Now().Add(time.Minute)
	for {
		if state := text(t, ctx, "#job-state"); state == "finished" {
			break
		} else if time.Now().After(deadline) {
			screenshot(t, ctx, "dashboard-bulk-stuck.png")
			t.Fatalf("the job's page still says %q", state)
		}
		time.Sleep(200 * time.Millisecond)
		do(t, ctx, "reload the job's page", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#job-progress")))
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('#job-items tr.outcome-replayed').length`); n != prs {
		t.Fatalf("the job's page lists %d replayed, want %d: %q", n, prs, text(t, ctx, "#job-items"))
	}
	screenshot(t, ctx, "dashboard-bulk-job.png")

	waitCond(t, time.Minute, "every saga failed at NOTIFYING MERGED", func() bool {
		for _, pr := range failing {
			s, err := c.Saga(context.Background(), pr)
			if err != nil || s.State != contracts.StateMerged {
				return false
			}
		}
		return true
	})
	for _, pr := range failing {
		retriedOnce(t, c, pr)
	}
	if s, err := c.Saga(context.Background(), red); err != nil || s.State != contracts.StateMergeFailed || s.Attempts != 1 {
		t.Fatalf("%s (failed at VALIDATING, not selected): %+v %v, want untouched", red, s, err)
	}
}
