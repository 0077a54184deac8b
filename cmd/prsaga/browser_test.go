package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/prsaga/prsaga/cmd/prsaga/internal/client"
	"github.com/prsaga/prsaga/cmd/prsaga/internal/stack"
	"github.com/prsaga/prsaga/contracts"
)

// chromium finds Debian's chromium (what .ci/run installs). Without it the
// test fails in CI (CI=true) and is skipped, loudly, elsewhere.
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "headless Chromium is not installed: the dashboard's browser test cannot run (apt-get install -y chromium)"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Log(strings.Repeat("!", 72))
	t.Log(msg)
	t.Log(strings.Repeat("!", 72))
	t.Skip(msg)
	return ""
}

// browser starts headless Chromium with a fresh profile; the flags keep it
// off the network (this machine's network is closed).
func browser(t *testing.T, deadline time.Duration) context.Context {
	path := chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	t.Cleanup(cancel)
	actx, acancel := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		// Chromium puts its singleton socket in a directory of its own
		// under TMPDIR and leaves it behind: keep it in the test's.
		chromedp.Env("TMPDIR="+t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(bcancel)
	// The first run starts the browser, which lives as long as the context
	// of that run: the test's, not a step's.
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	return bctx
}

// stepTimeout bounds each browser step, so that a failing one says which.
const stepTimeout = 20 * time.Second

// screenshot keeps a full-page PNG under the test's temp dir and, when
// PRSAGA_ARTIFACTS is set, copies it there.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // quality 100 means PNG
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s (%d bytes)", path, len(png))
	if dir := os.Getenv("PRSAGA_ARTIFACTS"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

// waitNewPage waits, after a click that loads a page, for a document
// without the mark `window.prsagaOldPage` set on the one before (errors
// while the page is being replaced are part of the wait).
func waitNewPage(t *testing.T, ctx context.Context) {
	t.Helper()
	deadline := time.Now().Add(stepTimeout)
	for {
		c, cancel := context.WithTimeout(ctx, time.Second)
		fresh, err := chromedp.Run(c, chromedp.Evaluate[bool](`window.prsagaOldPage === undefined && document.readyState === "complete"`))
		cancel()
		if err == nil && fresh {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no new page within %s (last error: %v)", stepTimeout, err)
		}
		time.Sleep(20 * time.Millisecond) // the polling interval of a wait with a deadline
	}
}

func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// The operator's path through the dashboard on the real stack: a PR merged
// but failed at NOTIFYING (its watcher was down). Load, filter, open the
// timeline (it says the code IS merged, where it failed and why), press
// retry, confirm, and see MERGED.
func TestDashboardInBrowser(t *testing.T) {
	ctx := browser(t, 120*time.Second)

	cfg := testConfig(t)
	_, head := makeRepo(t, cfg.ReposDir, "acme/widgets", "feature/hello")
	_, ghead := makeRepo(t, cfg.ReposDir, "acme/gadgets", "feature/hello")
	cfg.WebhookAllowPrivate = true
	st := startWith(t, stack.Options{Config: cfg})
	c := client.New(st.URL, "")
	var up atomic.Bool
	h, err := startHook(up.Load)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	bg := context.Background()
	if err := c.PutWatchers(bg, "acme/widgets", []map[string]string{{"url": h.url, "secret": "browser-test-secret"}}); err != nil {
		t.Fatal(err)
	}
	for repo, sha := range map[string]string{"acme/widgets": head, "acme/gadgets": ghead} {
		setCI(t, c, repo, sha, "success")
	}
	const failing, clean = "acme/widgets#42", "acme/gadgets#1"
	mustMerge(t, c, request("acme/gadgets", 1, "feature/hello", ghead))
	waitState(t, c, clean, contracts.StateMerged, 1)
	mustMerge(t, c, request("acme/widgets", 42, "feature/hello", head))
	s := waitState(t, c, failing, contracts.StateMergeFailed, 1)
	if s.FailedStep != "NOTIFYING" || !s.Merged {
		t.Fatalf("setup: %+v, want merged and failed at NOTIFYING", s)
	}

	// Load: counts per state.
	do(t, ctx, "load the dashboard", chromedp.Navigate(st.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#sagas")))
	if counts := text(t, ctx, "#counts"); !strings.Contains(counts, "MERGED (1)") || !strings.Contains(counts, "MERGE_FAILED (1)") {
		t.Fatalf("counts: %q", counts)
	}
	checkOverview(t, ctx)
	screenshot(t, ctx, "dashboard-overview.png")
	// Click the failure branch of the picture: the failed list of that step.
	do(t, ctx, "click the picture's failure branch", chromedp.Click(chromedp.CSS(`#pipeline a.pipe-fail`)),
		chromedp.WaitVisible(chromedp.CSS(`#failed`)))
	if table := text(t, ctx, "#failed"); !strings.Contains(table, failing) || strings.Contains(table, clean) || !strings.Contains(table, "NOTIFYING") {
		t.Fatalf("failed list after clicking the picture: %q", table)
	}
	// Back on the dashboard, filter by state with the form.
	do(t, ctx, "back to the dashboard", chromedp.Navigate(st.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#sagas")))
	// Mark the old document and wait for one without the mark, or the
	// table could be read while it is being replaced.
	do(t, ctx, "filter by state",
		chromedp.Evaluate[chromedp.Void](`void (window.prsagaOldPage = true)`),
		chromedp.SetValue(chromedp.CSS("#f-state"), "MERGE_FAILED"),
		chromedp.Click(chromedp.CSS("#f-apply")))
	waitNewPage(t, ctx)
	do(t, ctx, "filtered page", chromedp.WaitReady(chromedp.CSS(`#f-state option[value="MERGE_FAILED"][selected]`)))
	table := text(t, ctx, "#sagas")
	if !strings.Contains(table, failing) || strings.Contains(table, clean) || !strings.Contains(table, "webhook_failed") {
		t.Fatalf("filtered table: %q, want only %s with its error", table, failing)
	}
	// Open the timeline.
	do(t, ctx, "open the timeline",
		chromedp.Click(chromedp.CSS(`#sagas a[href="/sagas/acme%2Fwidgets%2342"]`)),
		chromedp.WaitVisible(chromedp.CSS("#timeline")))
	merged := text(t, ctx, "#merged-line")
	if !strings.Contains(merged, "the code IS merged into main at "+s.MergeSHA) {
		t.Fatalf("merged line: %q", merged)
	}
	if failure := text(t, ctx, "#failure"); !strings.Contains(failure, "Failed at NOTIFYING") || !strings.Contains(failure, "webhook_failed") {
		t.Fatalf("failure box: %q", failure)
	}
	checkSagaPage(t, ctx, s.CorrelationID)
	screenshot(t, ctx, "dashboard-failed.png")

	// The receiver is back: retry from the dashboard.
	up.Store(true)
	do(t, ctx, "press retry", chromedp.Click(chromedp.CSS("#retry")), chromedp.WaitVisible(chromedp.CSS("#confirm")))
	if page := text(t, ctx, "body"); !strings.Contains(page, "back from MERGE_FAILED to NOTIFYING") {
		t.Fatalf("confirmation page: %q", page)
	}
	do(t, ctx, "confirm", chromedp.Click(chromedp.CSS("#confirm")), chromedp.WaitVisible(chromedp.CSS("#retried")))
	deadline := time.Now().Add(30 * time.Second)
	for {
		state := text(t, ctx, "#state")
		if strings.HasPrefix(state, "MERGED") {
			break
		}
		if time.Now().After(deadline) {
			screenshot(t, ctx, "dashboard-stuck.png")
			t.Fatalf("the timeline still says %q", state)
		}
		time.Sleep(200 * time.Millisecond)
		do(t, ctx, "reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#timeline")))
	}
	if tl := text(t, ctx, "#timeline"); !strings.Contains(tl, "by local") || !strings.Contains(tl, "INDEXING") {
		t.Fatalf("timeline after the retry: %q", tl)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('#gantt .retry-link').length`); n != 1 {
		t.Errorf("the Gantt timeline draws %d retry links, want 1", n)
	}
	screenshot(t, ctx, "dashboard-merged.png")
	if h.ok.Load() != 1 {
		t.Errorf("webhook delivered %d times after the retry, want 1", h.ok.Load())
	}
}

// With tokens set, the dashboard asks for one: the read token shows the
// sagas and no Retry button; the API token brings the button back.
func TestDashboardLoginInBrowser(t *testing.T) {
	ctx := browser(t, 120*time.Second)

	cfg := testConfig(t)
	cfg.APIToken, cfg.ReadToken = testAPIToken, testReadToken
	_, head := makeRepo(t, cfg.ReposDir, "acme/widgets", "feature/hello")
	st := startWith(t, stack.Options{Config: cfg})
	c := client.New(st.URL, testAPIToken)
	setCI(t, c, "acme/widgets", head, "failure")
	const failing = "acme/widgets#7"
	mustMerge(t, c, request("acme/widgets", 7, "feature/hello", head))
	waitState(t, c, failing, contracts.StateMergeFailed, 1)

	login := func(token string) {
		t.Helper()
		do(t, ctx, "log in", chromedp.WaitVisible(chromedp.CSS("#token")),
			chromedp.SendKeys(chromedp.CSS("#token"), token),
			chromedp.Click(chromedp.CSS("#login")))
	}
	// Without a session the dashboard sends the browser to log in.
	do(t, ctx, "load the dashboard", chromedp.Navigate(st.URL+"/"))
	login(testReadToken)
	do(t, ctx, "back on the dashboard", chromedp.WaitVisible(chromedp.CSS("#sagas")))
	if hdr := text(t, ctx, "header"); !strings.Contains(hdr, "signed in as reader") {
		t.Fatalf("header after logging in with the read token: %q", hdr)
	}
	do(t, ctx, "open the timeline",
		chromedp.Click(chromedp.CSS(`#sagas a[href="/sagas/acme%2Fwidgets%237"]`)),
		chromedp.WaitVisible(chromedp.CSS("#timeline")))
	if body := text(t, ctx, "body"); strings.Contains(body, "Retry VALIDATING") {
		t.Fatalf("a read session is offered the retry button: %q", body)
	}
	screenshot(t, ctx, "dashboard-reader.png")

	do(t, ctx, "open the login page", chromedp.Navigate(st.URL+"/login?next="+"%2Fsagas%2Facme%252Fwidgets%25237"))
	login(testAPIToken)
	do(t, ctx, "the timeline with the operator's session", chromedp.WaitVisible(chromedp.CSS("#retry")))
	if hdr := text(t, ctx, "header"); !strings.Contains(hdr, "signed in as operator") {
		t.Fatalf("header after logging in with the API token: %q", hdr)
	}
	do(t, ctx, "press retry", chromedp.Click(chromedp.CSS("#retry")), chromedp.WaitVisible(chromedp.CSS("#confirm")))
}
