package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/prsaga/prsaga/cmd/prsaga/internal/client"
	"github.com/prsaga/prsaga/contracts"
	"github.com/prsaga/prsaga/platform/bus"
	_ "github.com/prsaga/prsaga/platform/sqlite" // registers the "sqlite" driver
)

func secretHex(t *testing.T) string {
	t.Helper()
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// TestSecretsNeverLeave runs a saga whose repository has two watchers —
// one up, one down (its deliveries fail, with the URL and secret in play
// in every error path), so the saga fails at NOTIFYING, is fixed and
// retried to MERGED — and then greps everything the run wrote for the
// webhook secrets and the URLs' paths and query (design §11): the log
// files, every file under the data dir (SQLite databases and their WAL,
// the JetStream store, the search index) except the notifier's database,
// whose tables are read instead (the watcher table is where the secrets
// live, by necessity), every API answer, the dashboard's pages, the CLI's
// output, and every message of every stream.
func TestSecretsNeverLeave(t *testing.T) {
	cfg := testConfig(t)
	cfg.WebhookAllowPrivate = true
	_, head := makeRepo(t, cfg.ReposDir, "acme/widgets", "feature/hello")
	st := startStack(t, cfg)
	c := client.New(st.URL, "")
	setCI(t, c, "acme/widgets", head, "success")

	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) }))
	defer up.Close()
	downAddr := freeAddr(t) // a port nobody answers on
	pathUp, pathDown, query := "/hooks/"+secretHex(t), "/hooks/"+secretHex(t), "token="+secretHex(t)
	secretUp, secretDown := "s-"+secretHex(t), "s-"+secretHex(t)
	needles := []string{pathUp, pathDown, strings.TrimPrefix(pathUp, "/hooks/"), strings.TrimPrefix(pathDown, "/hooks/"),
		query, strings.TrimPrefix(query, "token="), secretUp, secretDown, url.QueryEscape(pathUp), url.PathEscape(query)}
	var answers bytes.Buffer // every API answer and page
	put := func(ws ...map[string]string) {
		t.Helper()
		body := fmt.Sprintf(`[%s]`, strings.Join(func() []string {
			var out []string
			for _, w := range ws {
				out = append(out, fmt.Sprintf(`{"url":%q,"secret":%q}`, w["url"], w["secret"]))
			}
			return out
		}(), ","))
		req, _ := http.NewRequest(http.MethodPut, st.URL+"/api/v1/repos/acme/widgets/watchers", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		answers.Write(raw)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("put watchers: %d %s", resp.StatusCode, raw)
		}
	}
	put(map[string]string{"url": up.URL + pathUp, "secret": secretUp},
		map[string]string{"url": "http://" + downAddr + pathDown + "?" + query, "secret": secretDown})

	r := request("acme/widgets", 42, "feature/hello", head)
	acc := mustMerge(t, c, r)
	s := waitTerminal(t, c, r.PRID)
	if s.State != "MERGE_FAILED" || s.FailedStep != "NOTIFYING" || !strings.Contains(s.LastError, contracts.CodeWebhookFailed) {
		t.Fatalf("with a watcher down: %s at %s (%q), want MERGE_FAILED at NOTIFYING, webhook_failed", s.State, s.FailedStep, s.LastError)
	}
	get := func(path string) {
		t.Helper()
		resp, err := http.Get(st.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode >= 500 {
			t.Errorf("GET %s: %d", path, resp.StatusCode)
		}
		answers.Write(raw)
	}
	pr := url.PathEscape(r.PRID)
	pages := []string{"/api/v1/sagas", "/api/v1/sagas/" + pr, "/api/v1/sagas/" + pr + "/events", "/api/v1/runs/" + acc.CorrelationID,
		"/api/v1/stats", "/api/v1/repos/acme/widgets/watchers", "/", "/?state=MERGE_FAILED", "/sagas/" + pr, "/sagas/" + pr + "/retry",
		"/metrics", "/readyz", "/healthz"}
	for _, p := range pages {
		get(p) // while failed: the dashboard shows the error and the retry's dry run
	}

	// Fix the watcher (same URL, now answered) and retry.
	fixed := &http.Server{Handler: up.Config.Handler}
	fixedLn, err := net.Listen("tcp", downAddr)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = fixed.Serve(fixedLn) }()
	defer fixed.Close()
	code, out, errOut := runCLI(t, "retry", r.PRID, "--api", st.URL)
	answers.WriteString(out + errOut)
	if code != exitOK {
		t.Fatalf("retry: %d %s %s", code, out, errOut)
	}
	s = waitState(t, c, r.PRID, contracts.StateMerged, 2)
	for _, p := range pages {
		get(p)
	}
	for _, args := range [][]string{{"status", r.PRID}, {"history", r.PRID}, {"list"}, {"status", r.PRID, "--json"},
		{"trace", acc.CorrelationID, "--logs", cfg.LogDir}} {
		code, out, errOut := runCLI(t, append(args, "--api", st.URL)...)
		if code != exitOK {
			t.Errorf("prsaga %v: %d %s", args, code, errOut)
		}
		answers.WriteString(out + errOut)
	}
	code, out, errOut = runCLIEnv(t, map[string]string{"PRSAGA_NATS_URL": st.NATS.Addr()}, "dlq", "list", "--json")
	answers.WriteString(out + errOut)
	if code != exitOK {
		t.Errorf("dlq list: %d %s", code, errOut)
	}

	// Every message of every stream, headers and body.
	var msgs bytes.Buffer
	for _, name := range []string{contracts.Stream, contracts.DLQStream, bus.AdvisoryStream} {
		n := dumpStream(t, st.Bus, name, &msgs)
		if name == contracts.Stream && n < 10 {
			t.Errorf("stream %s: %d messages read, want the run's events", name, n)
		}
	}
	st.Stop() // flush logs and databases before reading the files

	sources := map[string][]byte{"API answers, pages and CLI output": answers.Bytes(), "stream messages": msgs.Bytes()}
	notifierDB := ""
	err = filepath.WalkDir(cfg.DataDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if strings.HasPrefix(filepath.Base(path), "notifier.sqlite") {
			if filepath.Base(path) == "notifier.sqlite" {
				notifierDB = path
			}
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		sources[path] = b
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if notifierDB == "" {
		t.Fatal("no notifier database under the data dir")
	}
	sources["notifier database, all tables but watcher"] = dumpTables(t, notifierDB, "watcher")
	logs := 0
	for path := range sources {
		if strings.HasSuffix(path, ".jsonl") {
			logs++
		}
	}
	if logs < 5 {
		t.Errorf("read %d log files, want one per service", logs)
	}
	// The needles are there to be found: the notifier's watcher table
	// holds them.
	if w := dumpTables(t, notifierDB); !bytes.Contains(w, []byte(secretDown)) || !bytes.Contains(w, []byte(pathDown)) {
		t.Fatal("the notifier's own tables do not hold the watcher: the search would prove nothing")
	}
	for where, b := range sources {
		for _, n := range needles {
			if i := bytes.Index(b, []byte(n)); i >= 0 {
				lo, hi := max(0, i-80), min(len(b), i+len(n)+80)
				t.Errorf("%s contains %q: …%q…", where, n, b[lo:hi])
			}
		}
	}
	t.Logf("searched %d sources (%d log files) for %d secrets and URL parts", len(sources), logs, len(needles))
}

// dumpStream writes every message of a stream (subject, headers, body)
// to w and returns how many it read.
func dumpStream(t *testing.T, b *bus.Bus, name string, w io.Writer) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := b.JS.Stream(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for seq := uint64(1); ; n++ {
		m, err := s.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(">"))
		if err != nil {
			return n
		}
		fmt.Fprintf(w, "%s %v\n%s\n", m.Subject, m.Header, m.Data)
		seq = m.Sequence + 1
	}
}

// dumpTables writes every row of every table of a SQLite file, but the
// excluded tables, as text.
func dumpTables(t *testing.T, path string, exclude ...string) []byte {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table'`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		skip := false
		for _, x := range exclude {
			skip = skip || name == x
		}
		if !skip {
			tables = append(tables, name)
		}
	}
	rows.Close()
	var out bytes.Buffer
	for _, table := range tables {
		rows, err := db.Query(`SELECT * FROM "` + table + `"`)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&out, "%s:", table)
			for _, v := range vals {
				if b, ok := v.([]byte); ok {
					v = string(b)
				}
				fmt.Fprintf(&out, " %v", v)
			}
			out.WriteByte('\n')
		}
		rows.Close()
	}
	return out.Bytes()
}
