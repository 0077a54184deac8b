package main

import (
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
)

// The rows every fixture holds. The upgrade tests look for exactly these
// (ids, states, counts): change them together.
//
// Every store: an inbox entry of event evSeen for each of its consumers,
// a sent outbox row evSent and an unsent one evUnsent of the event type
// the service emits.
// validator: two commit statuses, one protection, three PR locks (held,
// merged, free).
// merger (from its first migration on): a merge journal entry.
// notifier: two watchers; run corrMerged delivered to w1 and failed for
// w2 after 3 attempts.
// ledger: a saga in each state (PRs #1..#6: VALIDATING, MERGING,
// NOTIFYING, INDEXING, MERGED, MERGE_FAILED), each with its transitions
// along the path and its requested event; a stored retry answer (from
// the version that added the table on).
const (
	evSeen     = "01JDX0000000000000000SEEN"
	evSent     = "01JDX0000000000000000SENT"
	evUnsent   = "01JDX000000000000000UNSNT"
	repo       = "acme/widgets"
	headSHA    = "1111111111111111111111111111111111111111"
	baseSHA    = "2222222222222222222222222222222222222222"
	mergeSHA   = "3333333333333333333333333333333333333333"
	corrMerged = "01JDX00000000000000CORR05"
	retryKey   = "retry-key-1"
)

// emits is what each service puts in its outbox, and consumers its
// durable consumers (the inbox's consumer column).
var (
	emits = map[string]struct{ typ, subject string }{
		"validator": {"prsaga.merge.validated.v1", "prsaga.merge.validated"},
		"merger":    {"prsaga.merge.merged.v1", "prsaga.merge.merged"},
		"notifier":  {"prsaga.merge.notified.v1", "prsaga.merge.notified"},
		"indexer":   {"prsaga.merge.indexed.v1", "prsaga.merge.indexed"},
		"ledger":    {"prsaga.saga.state_changed.v1", "prsaga.saga.state_changed"},
	}
	consumers = map[string][]string{
		"validator": {"validator", "validator-lock"},
		"merger":    {"merger"},
		"notifier":  {"notifier"},
		"indexer":   {"indexer"},
		"ledger":    {"ledger"},
	}
)

func micros(t time.Time) int64 { return t.UnixMicro() }

func prID(n int) string { return fmt.Sprintf("%s#%d", repo, n) }

func corr(n int) string { return fmt.Sprintf("01JDX00000000000000CORR%02d", n) }

func request(n int) map[string]any {
	return map[string]any{"pr_id": prID(n), "repo": repo, "pr_number": n, "source_branch": fmt.Sprintf("feature-%d", n),
		"target_branch": "main", "head_sha": headSHA, "strategy": "merge", "title": fmt.Sprintf("Change %d", n), "requested_by": "alice"}
}

// seed writes the rows of service's fixture, each into a table the version
// has (a later version's table is left out).
func seed(db *sql.DB, service string) error {
	tables := map[string]bool{}
	rows, err := db.Query(`SELECT name FROM sqlite_schema WHERE type = 'table'`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return err
		}
		tables[n] = true
	}
	if err := rows.Close(); err != nil {
		return err
	}
	var stmts []stmt
	stmts = append(stmts, platformRows(service)...)
	switch service {
	case "validator":
		stmts = append(stmts, validatorRows()...)
	case "merger":
		stmts = append(stmts, mergerRows()...)
	case "notifier":
		stmts = append(stmts, notifierRows()...)
	case "ledger":
		stmts = append(stmts, ledgerRows()...)
	}
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, s := range stmts {
		if !tables[s.table] {
			continue
		}
		if _, err := tx.Exec(s.sql, s.args...); err != nil {
			return fmt.Errorf("%s: %w", s.table, err)
		}
	}
	return tx.Commit()
}

type stmt struct {
	table string
	sql   string
	args  []any
}

func platformRows(service string) []stmt {
	var out []stmt
	for _, c := range consumers[service] {
		out = append(out, stmt{"inbox", `INSERT INTO inbox (consumer, event_id, processed_at) VALUES (?, ?, ?)`,
			[]any{c, evSeen, micros(at)}})
	}
	e := emits[service]
	for i, id := range []string{evSent, evUnsent} {
		created := at.Add(time.Duration(i+1) * time.Second)
		h, body := outboxEvent(service, id, e.typ, created)
		var sent any
		if id == evSent {
			sent = micros(created.Add(10 * time.Millisecond))
		}
		out = append(out, stmt{"outbox", `INSERT INTO outbox (id, subject, headers, body, created_at, sent_at) VALUES (?, ?, ?, ?, ?, ?)`,
			[]any{id, e.subject, h, body, micros(created), sent}})
	}
	return out
}

// outboxEvent is an outbox row's headers (a binary-mode CloudEvent's, as
// json.Marshal writes a nats.Header) and body.
func outboxEvent(service, id, typ string, t time.Time) (string, []byte) {
	h := map[string][]string{
		"Content-Type": {"application/json"}, "Nats-Msg-Id": {id},
		"ce-attempt": {"1"}, "ce-causationid": {corr(5)}, "ce-correlationid": {corr(5)},
		"ce-datacontenttype": {"application/json"}, "ce-id": {id}, "ce-source": {"/prsaga/" + service},
		"ce-specversion": {"1.0"}, "ce-subject": {prID(5)}, "ce-time": {t.Format(time.RFC3339)}, "ce-type": {typ},
	}
	data := request(5)
	switch service {
	case "validator":
		data["base_sha"], data["checks"] = baseSHA, []map[string]string{{"context": "ci", "state": "success"}}
	case "merger":
		data["base_sha"], data["merge_sha"], data["already_merged"], data["changed_paths"] = baseSHA, mergeSHA, false, []string{"README.md"}
	case "notifier":
		data["merge_sha"], data["changed_paths"] = mergeSHA, []string{"README.md"}
		data["deliveries"] = []map[string]any{{"watcher_id": watcherID("https://hooks.example/a"), "status": "delivered", "attempts": 1}}
	case "indexer":
		data["merge_sha"], data["documents"] = mergeSHA, 1
	case "ledger":
		data = map[string]any{"pr_id": prID(5), "from_state": "INDEXING", "to_state": "MERGED", "merged": true, "merge_sha": mergeSHA, "reason": "indexed"}
	}
	hj, err := json.Marshal(h)
	if err != nil {
		panic(err) // maps of strings always marshal
	}
	body, err := json.Marshal(data)
	if err != nil {
		panic(err)
	}
	return string(hj), body
}

func validatorRows() []stmt {
	return []stmt{
		{"commit_status", `INSERT INTO commit_status (repo, sha, context, state, description, updated_at) VALUES (?, ?, ?, ?, ?, ?)`,
			[]any{repo, headSHA, "ci", "success", "all green", micros(at)}},
		{"commit_status", `INSERT INTO commit_status (repo, sha, context, state, description, updated_at) VALUES (?, ?, ?, ?, ?, ?)`,
			[]any{repo, headSHA, "lint", "failure", "2 warnings", micros(at)}},
		{"protection", `INSERT INTO protection (repo, branch, contexts, updated_at) VALUES (?, ?, ?, ?)`,
			[]any{repo, "main", `["ci","lint"]`, micros(at)}},
		{"pr_lock", `INSERT INTO pr_lock (pr_id, correlation_id, attempt, merged, updated_at) VALUES (?, ?, ?, ?, ?)`,
			[]any{prID(1), corr(1), 1, 0, micros(at)}},
		{"pr_lock", `INSERT INTO pr_lock (pr_id, correlation_id, attempt, merged, updated_at) VALUES (?, ?, ?, ?, ?)`,
			[]any{prID(5), corr(5), 1, 1, micros(at)}},
		{"pr_lock", `INSERT INTO pr_lock (pr_id, correlation_id, attempt, merged, updated_at) VALUES (?, ?, ?, ?, ?)`,
			[]any{prID(6), "", 2, 0, micros(at)}},
	}
}

func mergerRows() []stmt {
	return []stmt{{"merge_journal", `INSERT INTO merge_journal (pr_id, merge_sha, repo, target_branch, strategy, base_sha, correlation_id, recorded_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, []any{prID(5), mergeSHA, repo, "main", "merge", baseSHA, corr(5), micros(at)}}}
}

// watcherID is the notifier's id of a watcher of repo (stable per repo
// and URL since the first version).
func watcherID(url string) string {
	h := sha256.Sum256([]byte(repo + "\x00" + url))
	return "w" + hex.EncodeToString(h[:])[:15]
}

func notifierRows() []stmt {
	var out []stmt
	for _, url := range []string{"https://hooks.example/a", "https://hooks.example/b"} {
		out = append(out, stmt{"watcher", `INSERT INTO watcher (id, repo, url, secret, created_at) VALUES (?, ?, ?, ?, ?)`,
			[]any{watcherID(url), repo, url, "s3cret-" + url[len(url)-1:], micros(at)}})
	}
	out = append(out,
		stmt{"delivery", `INSERT INTO delivery (correlation_id, watcher_id, delivered, attempts, last_error, updated_at) VALUES (?, ?, ?, ?, ?, ?)`,
			[]any{corrMerged, watcherID("https://hooks.example/a"), 1, 1, "", micros(at)}},
		stmt{"delivery", `INSERT INTO delivery (correlation_id, watcher_id, delivered, attempts, last_error, updated_at) VALUES (?, ?, ?, ?, ?, ?)`,
			[]any{corrMerged, watcherID("https://hooks.example/b"), 0, 3, "503 Service Unavailable", micros(at)}})
	return out
}

// route is the states a saga passed through, in order, to reach each state.
var route = []string{"VALIDATING", "MERGING", "NOTIFYING", "INDEXING", "MERGED"}

func ledgerRows() []stmt {
	var out []stmt
	final := []string{"VALIDATING", "MERGING", "NOTIFYING", "INDEXING", "MERGED", "MERGE_FAILED"}
	for i, state := range final {
		n := i + 1
		steps := route[:min(n, len(route))]
		failedStep, lastErr, merged, sha := "", "", 0, ""
		switch state {
		case "MERGE_FAILED":
			steps = append(route[:2:2], "MERGE_FAILED")
			failedStep, lastErr = "MERGING", "conflict: README.md"
		case "MERGED":
			merged, sha = 1, mergeSHA
		}
		updated := at.Add(time.Duration(len(steps)) * time.Second)
		out = append(out, stmt{"pr_saga", `INSERT INTO pr_saga (pr_id, repo, correlation_id, state, failed_step, last_error, timed_out, attempts, merge_sha, merged, version, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, 0, 1, ?, ?, ?, ?, ?)`,
			[]any{prID(n), repo, corr(n), state, failedStep, lastErr, sha, merged, len(steps), micros(at), micros(updated)}})
		from := ""
		for seq, to := range steps {
			out = append(out, stmt{"saga_transition", `INSERT INTO saga_transition (pr_id, seq, correlation_id, from_state, to_state, reason, event_id, inferred, actor, at)
				VALUES (?, ?, ?, ?, ?, ?, ?, 0, '', ?)`,
				[]any{prID(n), seq + 1, corr(n), from, to, "step " + to, fmt.Sprintf("%s-ev%d", corr(n), seq+1), micros(at.Add(time.Duration(seq+1) * time.Second))}})
			from = to
		}
		ev := map[string]any{"specversion": "1.0", "id": corr(n), "source": "https://forge.example/acme", "type": "prsaga.merge.requested.v1",
			"subject": prID(n), "datacontenttype": "application/json", "time": at.Format(time.RFC3339), "data": request(n),
			"attempt": "1", "correlationid": corr(n)}
		raw, err := json.Marshal(ev)
		if err != nil {
			panic(err)
		}
		out = append(out, stmt{"saga_event", `INSERT INTO saga_event (event_id, pr_id, correlation_id, type, status, reason, received_at, event)
			VALUES (?, ?, ?, ?, 'applied', '', ?, ?)`, []any{corr(n), prID(n), corr(n), "prsaga.merge.requested.v1", micros(at), string(raw)}})
	}
	out = append(out, stmt{"retry_answer", `INSERT INTO retry_answer (idempotency_key, pr_id, answer, created_at) VALUES (?, ?, ?, ?)`,
		[]any{retryKey, prID(6), `{"pr_id":"acme/widgets#6","accepted":false,"refused":"the failure needs force"}`, micros(at)}})
	return out
}
