package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/prsaga/prsaga/cmd/prsaga/internal/client"
	"github.com/prsaga/prsaga/cmd/prsaga/internal/stack"
	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/step"
	"github.com/prsaga/prsaga/services/indexer/bleveindex"
	"github.com/prsaga/prsaga/services/indexer/rebuild"
)

// indexView is what a test compares of an index: its document count and
// the hits of a few searches (PR ids, titles, merge shas).
type indexView struct {
	Count    uint64
	Searches map[string][]string
}

func viewIndex(t *testing.T, dir string) indexView {
	t.Helper()
	idx, err := bleveindex.Open(dir, time.Second)
	if err != nil {
		t.Fatalf("open index: %v", err)
	}
	defer idx.Close()
	n, err := idx.Count()
	if err != nil {
		t.Fatal(err)
	}
	v := indexView{Count: n, Searches: map[string][]string{}}
	for _, q := range []string{"messages:hello", "hello.txt", "title:hello", "target_branch:main"} {
		res, err := idx.Search(context.Background(), bleveindex.Query{Text: q, Limit: 100})
		if err != nil {
			t.Fatalf("search %q: %v", q, err)
		}
		var hits []string
		for _, h := range res.Hits {
			hits = append(hits, fmt.Sprintf("%s|%s|%s|%s", h.PRID, h.Title, h.MergeSHA, h.MergedAt.UTC().Format(time.RFC3339)))
		}
		sort.Strings(hits)
		v.Searches[q] = hits
	}
	return v
}

func reindexJSON(t *testing.T, env map[string]string, args ...string) rebuild.Summary {
	t.Helper()
	code, out, errOut := runCLIEnv(t, env, append([]string{"reindex", "--json"}, args...)...)
	if code != exitOK {
		t.Fatalf("reindex %v = %d\nstdout %s\nstderr %s", args, code, out, errOut)
	}
	var s rebuild.Summary
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("reindex --json: %v\n%s", err, out)
	}
	return s
}

// TestReindex: three sagas are merged and indexed by an indexer running in
// its own stack; with the indexer stopped, the index is corrupted, then
// deleted, and `prsaga reindex` rebuilds it from the stream each time with
// the same documents (count and searches, commit messages included); a
// malformed notified event is skipped and counted; a later notified event
// of a PR replaces its document; while the index is held the rebuild is
// refused and the index left alone; --out builds a copy without the lock.
func TestReindex(t *testing.T) {
	cfg := testConfig(t)
	var heads []string
	for i := range 3 {
		_, head := makeRepo(t, cfg.ReposDir, fmt.Sprintf("acme/r%d", i), "feature/hello")
		heads = append(heads, head)
	}
	main := startWith(t, stack.Options{Config: cfg, Services: []string{contracts.ServiceValidator,
		contracts.ServiceMerger, contracts.ServiceNotifier, contracts.ServiceLedger}})
	icfg := cfg
	icfg.NATSURL = main.NATS.Addr()
	ix := startWith(t, stack.Options{Config: icfg, Services: []string{contracts.ServiceIndexer}, NoHTTP: true})
	ctx := context.Background()
	c := client.New(main.URL, "")
	var prs []string
	for i, head := range heads {
		repo := fmt.Sprintf("acme/r%d", i)
		setCI(t, c, repo, head, "success")
		r := request(repo, 10+i, "feature/hello", head)
		publishRequest(ctx, t, main.Bus, step.NewID(), "https://forge.example/acme", r)
		prs = append(prs, r.PRID)
	}
	for _, pr := range prs {
		if s := waitTerminal(t, c, pr); s.State != contracts.StateMerged {
			t.Fatalf("%s ended %s (%s), want MERGED", pr, s.State, s.LastError)
		}
	}
	evs := streamEvents(t, main.Bus, contracts.SubjectNotified, prs[0])
	if len(evs) != 1 {
		t.Fatalf("want one notified event of %s, got %d", prs[0], len(evs))
	}
	ix.Stop() // the index's one writer: its lock goes with it
	dir := filepath.Join(cfg.DataDir, "index")
	before := viewIndex(t, dir)
	if before.Count != 3 || len(before.Searches["messages:hello"]) != 3 {
		t.Fatalf("the indexer's index: %+v, want 3 PRs with their commit messages", before)
	}

	// An indexer holding the index: refused, the index untouched.
	env := map[string]string{"PRSAGA_NATS_URL": main.NATS.Addr(), "PRSAGA_DATA_DIR": cfg.DataDir, "PRSAGA_REPOS_DIR": cfg.ReposDir}
	held, err := bleveindex.Open(dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCLIEnv(t, env, "reindex", "--lock-timeout", "200ms")
	if code != exitFailed || !strings.Contains(errOut, "stop the indexer first") {
		t.Fatalf("reindex of a held index = %d %q, want %d and \"stop the indexer first\"", code, errOut, exitFailed)
	}
	// --out leaves the live index alone: allowed while it is held.
	copyDir := filepath.Join(t.TempDir(), "copy")
	if s := reindexJSON(t, env, "--out", copyDir, "--quiet"); s.Documents != 3 || s.Index != copyDir || s.Old != "" {
		t.Fatalf("reindex --out: %+v", s)
	}
	if err := held.Close(); err != nil {
		t.Fatal(err)
	}
	if got := viewIndex(t, copyDir); !reflect.DeepEqual(got, before) {
		t.Fatalf("the copy differs:\n got %+v\nwant %+v", got, before)
	}
	if got := viewIndex(t, dir); !reflect.DeepEqual(got, before) {
		t.Fatalf("a refused reindex changed the index:\n got %+v\nwant %+v", got, before)
	}
	if _, err := os.Stat(dir + ".reindex"); !os.IsNotExist(err) {
		t.Fatalf("a refused reindex left %s.reindex: %v", dir, err)
	}

	// A malformed event on the notified subject, as a broken producer would
	// publish it: skipped and counted, not fatal.
	if _, err := main.Bus.PublishMsg(ctx, &nats.Msg{Subject: contracts.SubjectNotified, Data: []byte(`{not json`),
		Header: nats.Header{"Nats-Msg-Id": {"bad-notified-1"}}}); err != nil {
		t.Fatal(err)
	}

	// Corrupt: the root file of the index overwritten.
	if err := os.WriteFile(filepath.Join(dir, "store", "root.bolt"), []byte("not a bolt file at all, garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLIEnv(t, env, "reindex")
	if code != exitOK || !strings.Contains(out, "documents written:    3") || !strings.Contains(errOut, "4/4 events") ||
		!strings.Contains(out, "undecodable") || !strings.Contains(out, "unreadable") {
		t.Fatalf("reindex of a corrupt index = %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	if got := viewIndex(t, dir); !reflect.DeepEqual(got, before) {
		t.Fatalf("rebuilt index differs:\n got %+v\nwant %+v", got, before)
	}
	olds, _ := filepath.Glob(dir + ".old-*")
	if len(olds) != 1 {
		t.Fatalf("want the corrupt index kept as one %s.old-*, got %v", dir, olds)
	}

	// Deleted: rebuilt again; a second rebuild of a good index is the same.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		s := reindexJSON(t, env, "--remove-old", "--quiet")
		if s.Events != 4 || s.Documents != 3 || s.Skipped[rebuild.SkipUndecodable] != 1 || s.SkippedTotal() != 1 || s.Old != "" || len(s.Warnings) != 0 {
			t.Fatalf("round %d: summary %+v", round, s)
		}
		if got := viewIndex(t, dir); !reflect.DeepEqual(got, before) {
			t.Fatalf("round %d: rebuilt index differs:\n got %+v\nwant %+v", round, got, before)
		}
	}
	if olds2, _ := filepath.Glob(dir + ".old-*"); !reflect.DeepEqual(olds2, olds) {
		t.Fatalf("--remove-old kept %v", olds2)
	}

	// A later notified event of a PR (a replay with a new title) wins.
	n := *evs[0].Payload.(*contracts.Notified)
	n.Title = "Renamed later"
	e, err := contracts.Follow(evs[0].Event, step.NewID(), contracts.TypeNotified, contracts.ServiceNotifier, time.Now(), n)
	if err != nil {
		t.Fatal(err)
	}
	if err := main.Bus.Publish(ctx, e); err != nil {
		t.Fatal(err)
	}
	if s := reindexJSON(t, env, "--remove-old", "--quiet"); s.Events != 5 || s.Documents != 3 {
		t.Fatalf("after a later event: %+v", s)
	}
	idx, err := bleveindex.Open(dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	res, err := idx.Search(ctx, bleveindex.Query{Text: `title:renamed`})
	if err != nil {
		t.Fatal(err)
	}
	if res.Total != 1 || res.Hits[0].PRID != prs[0] {
		t.Fatalf("search title:renamed = %+v, want only %s", res, prs[0])
	}
	if err := idx.Close(); err != nil {
		t.Fatal(err)
	}

	// The stream lost its first event (as when events age out): refused
	// unless --allow-partial, which says so.
	stream, err := main.Bus.JS.Stream(ctx, contracts.Stream)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.DeleteMsg(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCLIEnv(t, env, "reindex", "--quiet"); code != exitFailed || !strings.Contains(errOut, "--allow-partial") {
		t.Fatalf("reindex of a partial stream = %d %q", code, errOut)
	}
	if s := reindexJSON(t, env, "--remove-old", "--quiet", "--allow-partial"); !s.Partial || s.FirstSeq != 2 || s.Documents != 3 {
		t.Fatalf("reindex --allow-partial: %+v", s)
	}
}

func TestReindexUsage(t *testing.T) {
	for _, args := range [][]string{{"reindex", "extra"}, {"reindex", "--out", "x", "--remove-old"}, {"reindex", "--lock-timeout", "0s"}} {
		if code, _, _ := runCLI(t, args...); code != exitUsage {
			t.Errorf("%v = %d, want %d", args, code, exitUsage)
		}
	}
}
