package bleveindex

import (
	"context"
	"errors"
	"fmt"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search/query"
	"github.com/blevesearch/bleve/v2/search/searcher"
	vellumregexp "github.com/blevesearch/vellum/regexp"
)

// Limits of Search.
const (
	DefaultLimit  = 20
	MaxLimit      = 1000
	MaxQueryBytes = 1024
)

// ErrBadQuery is matched (errors.Is) when a search query is empty, too long
// or not valid query-string syntax: the caller's mistake (HTTP 400).
var ErrBadQuery = errors.New("bad search query")

// Result is one page of search results, best first.
type Result struct {
	Total uint64 // all matching documents, not only those in Hits
	Hits  []Hit
}

// Hit is one matching merged PR.
type Hit struct {
	PRID     string
	Repo     string
	Title    string
	MergeSHA string
	Score    float64
}

// Search runs q, in bleve's query-string syntax, and returns at most limit
// hits (0 means DefaultLimit; capped at MaxLimit). The syntax:
//
//	token merge          either word, in any field (title, paths, messages, ...)
//	+token +merge        both words
//	title:token          a word of the title (also messages:, changed_paths:)
//	changed_paths:auth   a path component: internal/auth/token.go has auth, token, go
//	repo:acme/widgets    an exact repo; a slash needs no quoting, but the value
//	                     is case-sensitive and must not start and end with "/"
//	                     (that is a regexp); repo:"acme/widgets" works too
//	target_branch:main   likewise for target_branch, source_branch, merge_sha, pr_id
//	pr_id:acme/widgets#42   an exact PR
//	"fix the token"      a phrase
//	-title:wip           excludes
//	pr_number:>=40       a number range
//	merged_at:>"2025-01-01T00:00:00Z"  a date range (RFC 3339, quoted)
//
// A ':', '+', '-', '"' or space inside a keyword value needs a backslash or quotes.
func (x *Index) Search(ctx context.Context, q string, limit int) (Result, error) {
	qq, err := parseQuery(q)
	if err != nil {
		return Result{}, err
	}
	switch {
	case limit <= 0:
		limit = DefaultLimit
	case limit > MaxLimit:
		limit = MaxLimit
	}
	req := bleve.NewSearchRequestOptions(qq, limit, 0, false)
	req.Fields = []string{FieldRepo, FieldTitle, FieldMergeSHA}
	res, err := x.idx.SearchInContext(ctx, req)
	if err != nil {
		return Result{}, fmt.Errorf("search: %w", err)
	}
	out := Result{Total: res.Total, Hits: make([]Hit, 0, len(res.Hits))}
	for _, h := range res.Hits {
		out.Hits = append(out.Hits, Hit{
			PRID:     h.ID,
			Repo:     str(h.Fields[FieldRepo]),
			Title:    str(h.Fields[FieldTitle]),
			MergeSHA: str(h.Fields[FieldMergeSHA]),
			Score:    h.Score,
		})
	}
	return out, nil
}

// parseQuery parses and checks q up front, so that a syntax error is told
// apart from a failure of the index.
func parseQuery(q string) (query.Query, error) {
	switch {
	case q == "":
		return nil, fmt.Errorf("%w: empty", ErrBadQuery)
	case len(q) > MaxQueryBytes:
		return nil, fmt.Errorf("%w: %d bytes long (at most %d)", ErrBadQuery, len(q), MaxQueryBytes)
	}
	parsed, err := bleve.NewQueryStringQuery(q).Parse()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadQuery, err)
	}
	if err := checkQuery(parsed); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadQuery, err)
	}
	return parsed, nil
}

// checkQuery finds what the parser accepts but the search would reject:
// regexps the index's automaton cannot run (bleve compiles them only when it
// searches) and fuzziness beyond bleve's maximum.
func checkQuery(q query.Query) error {
	switch q := q.(type) {
	case *query.BooleanQuery:
		for _, sub := range []query.Query{q.Must, q.Should, q.MustNot, q.Filter} {
			if sub != nil {
				if err := checkQuery(sub); err != nil {
					return err
				}
			}
		}
	case *query.ConjunctionQuery:
		return checkAll(q.Conjuncts)
	case *query.DisjunctionQuery:
		return checkAll(q.Disjuncts)
	case *query.RegexpQuery:
		if _, err := vellumregexp.New(q.Regexp); err != nil {
			return fmt.Errorf("regexp /%s/: %w", q.Regexp, err)
		}
	case *query.MatchQuery:
		if q.Fuzziness > searcher.MaxFuzziness {
			return fmt.Errorf("fuzziness %d exceeds %d", q.Fuzziness, searcher.MaxFuzziness)
		}
	}
	if v, ok := q.(query.ValidatableQuery); ok {
		return v.Validate()
	}
	return nil
}

func checkAll(qs []query.Query) error {
	for _, q := range qs {
		if err := checkQuery(q); err != nil {
			return err
		}
	}
	return nil
}

// str reads a stored field: a string, or the first of several values.
func str(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []any:
		if len(v) > 0 {
			s, _ := v[0].(string)
			return s
		}
	}
	return ""
}
