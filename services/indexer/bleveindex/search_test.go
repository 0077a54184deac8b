package bleveindex

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/numeric"
	"github.com/blevesearch/bleve/v2/search/query"
)

func TestSearch(t *testing.T) {
	x, _ := openTemp(t)
	upsert(t, x, widgets42(), gadgets7())
	const w, g = "acme/widgets#42", "acme/gadgets#7"
	for _, tc := range []struct {
		q    string
		want []string // in any order
	}{
		{"refresh", []string{w}},             // a title word, any field
		{"title:fix", []string{w}},           // a title word
		{"title:FIX", []string{w}},           // text fields are case-insensitive
		{"widgets", []string{w, g}},          // g's title; w's commit message trailer
		{"repo:acme/widgets", []string{w}},   // a keyword with a slash, unquoted
		{`repo:"acme/widgets"`, []string{w}}, // ... or quoted
		{"repo:acme", nil},                   // keywords match whole
		{"repo:widgets", nil},
		{"repo:Acme/Widgets", nil},                         // ... and case-sensitively
		{"repo:acme/*", []string{w, g}},                    // a wildcard
		{"changed_paths:auth", []string{w}},                // a directory of a changed path
		{"changed_paths:token", []string{w}},               // a file name without extension
		{"changed_paths:widgets", []string{g}},             // "web/pages/widgets.tsx"
		{"auth", []string{w}},                              // paths are in the default field too
		{"token.go", []string{w}},                          // a file name, whole
		{"files:README.md", []string{w}},                   // ... case-insensitively
		{"files:internal/auth/token.go", []string{w}},      // a path, whole
		{"files:auth", nil},                                // ... not in parts
		{"messages:expired", []string{w}},                  // commit messages
		{"target_branch:release/1.x", []string{g}},         // branch keywords
		{"pr_id:acme/widgets#42", []string{w}},             // an exact PR
		{sha1, []string{w}},                                // a merge sha, any field
		{"merge_sha:" + sha1, []string{w}},                 // a merge sha
		{"+page -repo:acme/widgets", []string{g}},          // required and excluded
		{"title:fix title:page", []string{w, g}},           // either
		{"pr_number:>=40", []string{w}},                    // a number range
		{"7", []string{g}},                                 // a PR number, bare: in the default field
		{`merged_at:>"2025-01-01T00:00:00Z"`, []string{w}}, // a date range
		{`"token refresh"`, []string{w}},                   // a phrase
		{"nothing-like-this", nil},
	} {
		got := ids(t, x, tc.q)
		slices.Sort(got)
		want := slices.Clone(tc.want)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("Search(%q) = %v, want %v", tc.q, got, want)
		}
	}

	res, err := x.Search(t.Context(), Query{Text: "repo:acme/widgets", Limit: 10})
	if err != nil || len(res.Hits) != 1 || res.Total != 1 {
		t.Fatalf("Search(repo:acme/widgets) = %+v, %v; want one hit", res, err)
	}
	h, d := res.Hits[0], widgets42()
	if h.PRID != d.PRID || h.Repo != d.Repo || h.Title != d.Title || h.MergeSHA != d.MergeSHA || h.Score <= 0 {
		t.Errorf("hit = %+v, want %s, %s, %q, %s and a positive score", h, d.PRID, d.Repo, d.Title, d.MergeSHA)
	}
}

func TestSearchLimit(t *testing.T) {
	x, _ := openTemp(t)
	var docs []Doc
	for i := range 5 {
		d := widgets42()
		d.PRNumber = i + 1
		d.PRID = fmt.Sprintf("acme/widgets#%d", d.PRNumber)
		docs = append(docs, d)
	}
	upsert(t, x, docs...)
	res, err := x.Search(t.Context(), Query{Text: "token", Limit: 2})
	if err != nil || len(res.Hits) != 2 || res.Total != 5 {
		t.Errorf("Search with limit 2 = %d hits of %d, %v; want 2 of 5", len(res.Hits), res.Total, err)
	}
	res, err = x.Search(t.Context(), Query{Text: "token", Limit: 0})
	if err != nil || len(res.Hits) != 5 {
		t.Errorf("Search with limit 0 = %d hits, %v; want all 5 (default limit)", len(res.Hits), err)
	}
}

func TestSearchBadQuery(t *testing.T) {
	x, _ := openTemp(t)
	upsert(t, x, widgets42())
	for _, q := range []string{
		"",
		strings.Repeat("a ", MaxQueryBytes),
		"title:",
		`"unterminated`,
		"a:b:c",
		"+",
		"pr_number:>abc",
		"merged_at:>yesterday",
		"/[/",                        // a regexp that does not compile
		"title:/a\\b/",               // one the index cannot run
		"refresh~3",                  // fuzziness beyond bleve's maximum
		"refresh~-1",                 // negative fuzziness: parsed, refused by the searcher
		"*000000?0??????????????fiF", // a wildcard beyond the automaton's states
		"title:*a?????????????b",
		"/.{100}/",               // a regexp larger than MaxPatternInsts
		strings.Repeat("*a", 40), // ... and a wildcard
	} {
		res, err := x.Search(t.Context(), Query{Text: q, Limit: 10})
		if !errors.Is(err, ErrBadQuery) {
			t.Errorf("Search(%q) = %+v, %v; want ErrBadQuery", q, res, err)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := x.Search(ctx, Query{Text: "token", Limit: 10}); err == nil || errors.Is(err, ErrBadQuery) {
		t.Errorf("Search with a cancelled context = %v, want an error that is not ErrBadQuery", err)
	}
}

// TestSearchTimeQueryErrors holds the net under checkQuery to what bleve
// really returns: a query that reaches the searcher unchecked and fails on
// its automaton is told apart from a failure of the index.
func TestSearchTimeQueryErrors(t *testing.T) {
	x, _ := openTemp(t)
	upsert(t, x, widgets42())
	for _, q := range []query.Query{
		query.NewWildcardQuery("*000000?0??????????????fiF"),
		query.NewRegexpQuery(`a\b`),
		query.NewRegexpQuery(`(`),
	} {
		err := x.use(func(idx bleve.Index) error {
			_, err := idx.SearchInContext(t.Context(), bleve.NewSearchRequest(q))
			return err
		})
		if err == nil || !isQueryError(err) {
			t.Errorf("search %#v: %v; want an error isQueryError knows", q, err)
		}
	}
	if isQueryError(context.Canceled) || isQueryError(errors.New("disk full")) {
		t.Error("isQueryError takes an error of the index for the query's")
	}
}

func TestSearchHitFieldsAndHighlights(t *testing.T) {
	x, _ := openTemp(t)
	upsert(t, x, widgets42(), gadgets7())
	d := widgets42()
	for _, tc := range []struct {
		q     string
		field string // the field whose fragment marks the match
		mark  string
	}{
		{"title:refresh", FieldTitle, "<mark>refresh</mark>"},
		{"refresh", FieldTitle, "<mark>refresh</mark>"}, // the default field
		{"changed_paths:auth", FieldChangedPaths, "internal/<mark>auth</mark>/token.go"},
		{"messages:expired", FieldMessages, "Handle <mark>expired</mark> tokens"},
	} {
		res, err := x.Search(t.Context(), Query{Text: tc.q})
		if err != nil || len(res.Hits) != 1 {
			t.Fatalf("Search(%q) = %+v, %v; want one hit", tc.q, res, err)
		}
		h := res.Hits[0]
		if h.PRID != d.PRID || h.Repo != d.Repo || h.Title != d.Title || h.TargetBranch != d.TargetBranch ||
			h.RequestedBy != d.RequestedBy || h.MergeSHA != d.MergeSHA || !h.MergedAt.Equal(d.MergedAt) {
			t.Errorf("Search(%q) hit = %+v; want the fields of %+v", tc.q, h, d)
		}
		frags := h.Highlights[tc.field]
		if len(frags) == 0 || !strings.Contains(frags[0], tc.mark) {
			t.Errorf("Search(%q) highlights = %q; want %s to contain %q", tc.q, h.Highlights, tc.field, tc.mark)
		}
	}
	// Highlights are HTML-escaped: a title is text, never markup.
	evil := gadgets7()
	evil.Title = `<script>alert("page")</script>`
	upsert(t, x, evil)
	res, err := x.Search(t.Context(), Query{Text: "title:alert"})
	if err != nil || len(res.Hits) != 1 {
		t.Fatalf("Search(title:alert) = %+v, %v", res, err)
	}
	if f := res.Hits[0].Highlights[FieldTitle]; len(f) == 0 || strings.Contains(f[0], "<script>") || !strings.Contains(f[0], "&lt;script&gt;") {
		t.Errorf("highlight of a title with markup = %q; want it escaped", f)
	}
	// A match in a field without highlights answers an empty map.
	res, _ = x.Search(t.Context(), Query{Text: "requested_by:alice"})
	if len(res.Hits) != 1 || res.Hits[0].PRID != d.PRID || res.Hits[0].Highlights == nil {
		t.Errorf("Search(requested_by:alice) = %+v; want %s with a non-nil highlights map", res.Hits, d.PRID)
	}
}

func TestSearchRepoFilter(t *testing.T) {
	x, _ := openTemp(t)
	older := widgets42()
	older.PRID, older.PRNumber, older.Title = "acme/widgets#41", 41, "Add a widgets page"
	older.MergedAt = older.MergedAt.Add(-time.Hour)
	upsert(t, x, widgets42(), gadgets7(), older)
	for _, tc := range []struct {
		q    Query
		want []string // in this order when ordered
	}{
		{Query{Text: "widgets"}, nil}, // sanity: without the filter all three
		{Query{Text: "widgets", Repo: "acme/gadgets"}, []string{"acme/gadgets#7"}},
		{Query{Text: "page", Repo: "acme/widgets"}, []string{"acme/widgets#41"}},
		{Query{Text: "title:page", Repo: "acme/nothing"}, []string{}},
		{Query{Repo: "acme/widgets"}, []string{"acme/widgets#42", "acme/widgets#41"}}, // newest merge first
		{Query{Repo: "Acme/Widgets"}, []string{}},                                     // exact, case-sensitive
	} {
		res, err := x.Search(t.Context(), tc.q)
		if err != nil {
			t.Fatalf("Search(%+v): %v", tc.q, err)
		}
		var got []string
		for _, h := range res.Hits {
			got = append(got, h.PRID)
		}
		if tc.want == nil {
			if len(got) != 3 {
				t.Errorf("Search(%+v) = %v; want all 3", tc.q, got)
			}
			continue
		}
		if tc.q.Text != "" {
			slices.Sort(got)
		}
		if !slices.Equal(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
			t.Errorf("Search(%+v) = %v; want %v", tc.q, got, tc.want)
		}
	}
	for _, q := range []Query{{}, {Repo: "../etc"}, {Text: "page", Repo: "acme"}} {
		if _, err := x.Search(t.Context(), q); !errors.Is(err, ErrBadQuery) {
			t.Errorf("Search(%+v) = %v; want ErrBadQuery", q, err)
		}
	}
}

func TestWildcardRegexp(t *testing.T) {
	for _, tc := range []struct{ w, want string }{
		{"acme/*", `acme/.*`},
		{"a?c", `a.c`},
		{"*.go", `.*\.go`},
		{`(a)+[b]{2}^$|\`, `\(a\)\+\[b\]\{2\}\^\$\|\\`},
		{"b\xffc*", "b\xffc.*"}, // not UTF-8: kept byte for byte
	} {
		if got := wildcardRegexp(tc.w); got != tc.want {
			t.Errorf("wildcardRegexp(%q) = %q, want %q", tc.w, got, tc.want)
		}
	}
}

// merged_at is left out of the default field (mapping.go): its terms are
// found in merged_at and not in _all. The query on merged_at is the control
// that the term is the one bleve indexed.
func TestMergedAtNotInTheDefaultField(t *testing.T) {
	x, _ := openTemp(t)
	d := widgets42()
	upsert(t, x, d)
	term, err := numeric.NewPrefixCodedInt64(d.MergedAt.UnixNano(), 0)
	if err != nil {
		t.Fatal(err)
	}
	count := func(field string) uint64 {
		t.Helper()
		q := query.NewTermQuery(string(term))
		q.SetField(field)
		var n uint64
		err := x.use(func(idx bleve.Index) error {
			res, err := idx.SearchInContext(t.Context(), bleve.NewSearchRequest(q))
			if err == nil {
				n = res.Total
			}
			return err
		})
		if err != nil {
			t.Fatalf("search %s: %v", field, err)
		}
		return n
	}
	if n := count(FieldMergedAt); n != 1 {
		t.Fatalf("merged_at's own term found %d documents, want 1", n)
	}
	if n := count("_all"); n != 0 {
		t.Errorf("merged_at's term found %d documents in the default field, want 0", n)
	}
}
