package bleveindex

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
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
		{"messages:expired", []string{w}},                  // commit messages
		{"target_branch:release/1.x", []string{g}},         // branch keywords
		{"pr_id:acme/widgets#42", []string{w}},             // an exact PR
		{sha1, []string{w}},                                // a merge sha, any field
		{"merge_sha:" + sha1, []string{w}},                 // a merge sha
		{"+page -repo:acme/widgets", []string{g}},          // required and excluded
		{"title:fix title:page", []string{w, g}},           // either
		{"pr_number:>=40", []string{w}},                    // a number range
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

	res, err := x.Search(t.Context(), "repo:acme/widgets", 10)
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
	res, err := x.Search(t.Context(), "token", 2)
	if err != nil || len(res.Hits) != 2 || res.Total != 5 {
		t.Errorf("Search with limit 2 = %d hits of %d, %v; want 2 of 5", len(res.Hits), res.Total, err)
	}
	res, err = x.Search(t.Context(), "token", 0)
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
		"/[/",          // a regexp that does not compile
		"title:/a\\b/", // one the index cannot run
		"refresh~3",    // fuzziness beyond bleve's maximum
	} {
		res, err := x.Search(t.Context(), q, 10)
		if !errors.Is(err, ErrBadQuery) {
			t.Errorf("Search(%q) = %+v, %v; want ErrBadQuery", q, res, err)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := x.Search(ctx, "token", 10); err == nil || errors.Is(err, ErrBadQuery) {
		t.Errorf("Search with a cancelled context = %v, want an error that is not ErrBadQuery", err)
	}
}
