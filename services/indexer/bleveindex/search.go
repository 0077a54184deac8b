package bleveindex

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"regexp/syntax"
	"strings"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search/highlight/highlighter/html"
	"github.com/blevesearch/bleve/v2/search/query"
	"github.com/blevesearch/bleve/v2/search/searcher"
	"github.com/blevesearch/vellum/levenshtein"
	vellumregexp "github.com/blevesearch/vellum/regexp"

	"github.com/prsaga/prsaga/contracts"
)

// Limits of Search.
const (
	DefaultLimit  = 20
	MaxLimit      = 1000
	MaxQueryBytes = 1024
)

// ErrBadQuery is matched (errors.Is) when a search query is empty, too long
// or not valid query-string syntax, or its repo is not a valid repository
// id: the caller's mistake (HTTP 400).
var ErrBadQuery = errors.New("bad search query")

// Result is one page of search results, best first.
type Result struct {
	Total uint64 // all matching documents, not only those in Hits
	Hits  []Hit
}

// Hit is one matching merged PR.
type Hit struct {
	PRID         string
	Repo         string
	Title        string
	TargetBranch string
	RequestedBy  string
	MergeSHA     string
	MergedAt     time.Time // zero if unknown
	Score        float64
	// Highlights are fragments of the matching text fields (title,
	// changed_paths, messages) by field, HTML-escaped, the matched terms
	// wrapped in <mark></mark>. Empty when only other fields matched.
	Highlights map[string][]string
}

// Query is one search.
type Query struct {
	// Text is in bleve's query-string syntax (see Search). It may be empty
	// when Repo is set: then every PR of the repository matches, newest
	// merge first.
	Text string
	// Repo, when set, keeps only the PRs of that repository ("owner/name",
	// matched exactly): a term on the repo keyword, required in conjunction
	// with Text.
	Repo string
	// Limit bounds the hits: 0 means DefaultLimit; capped at MaxLimit.
	Limit int
}

// highlighted are the fields whose matches a hit shows.
var highlighted = []string{FieldTitle, FieldChangedPaths, FieldMessages}

// Search runs q and returns its hits, best first. The syntax of q.Text:
//
//	token merge          either word, in any field (title, paths, messages, ...)
//	+token +merge        both words
//	title:token          a word of the title (also messages:, changed_paths:)
//	changed_paths:auth   a path component: internal/auth/token.go has auth, token, go
//	token.go             a changed file's name, whole (also files:token.go)
//	files:internal/auth/token.go   a changed path, whole
//	repo:acme/widgets    an exact repo; a slash needs no quoting, but the value
//	                     is case-sensitive and must not start and end with "/"
//	                     (that is a regexp); repo:"acme/widgets" works too
//	target_branch:main   likewise for target_branch, source_branch, merge_sha,
//	                     pr_id, requested_by
//	pr_id:acme/widgets#42   an exact PR
//	"fix the token"      a phrase
//	tok*n  /tok.n/       a wildcard, a regexp (each at most MaxPatternInsts)
//	tokn~1               a word within edit distance 1 (0 to 2)
//	-title:wip           excludes
//	pr_number:>=40       a number range
//	merged_at:>"2025-01-01T00:00:00Z"  a date range (RFC 3339, quoted)
//
// A ':', '+', '-', '"' or space inside a keyword value needs a backslash or
// quotes. Errors matching ErrBadQuery are the caller's mistake.
func (x *Index) Search(ctx context.Context, q Query) (Result, error) {
	qq, err := buildQuery(q)
	if err != nil {
		return Result{}, err
	}
	limit := q.Limit
	switch {
	case limit <= 0:
		limit = DefaultLimit
	case limit > MaxLimit:
		limit = MaxLimit
	}
	req := bleve.NewSearchRequestOptions(qq, limit, 0, false)
	req.Fields = []string{FieldRepo, FieldTitle, FieldTargetBranch, FieldRequestedBy, FieldMergeSHA, FieldMergedAt}
	if q.Text == "" {
		req.SortBy([]string{"-" + FieldMergedAt, "_id"})
	} else {
		req.Highlight = bleve.NewHighlightWithStyle(html.Name)
		req.Highlight.Fields = highlighted
	}
	var res *bleve.SearchResult
	err = x.use(func(idx bleve.Index) error {
		var err error
		if res, err = idx.SearchInContext(ctx, req); err != nil {
			if isQueryError(err) {
				return fmt.Errorf("%w: %w", ErrBadQuery, err)
			}
			return fmt.Errorf("search: %w", err)
		}
		return nil
	})
	if err != nil {
		return Result{}, err
	}
	out := Result{Total: res.Total, Hits: make([]Hit, 0, len(res.Hits))}
	for _, h := range res.Hits {
		hit := Hit{
			PRID:         h.ID,
			Repo:         str(h.Fields[FieldRepo]),
			Title:        str(h.Fields[FieldTitle]),
			TargetBranch: str(h.Fields[FieldTargetBranch]),
			RequestedBy:  str(h.Fields[FieldRequestedBy]),
			MergeSHA:     str(h.Fields[FieldMergeSHA]),
			Score:        finite(h.Score),
			Highlights:   map[string][]string{},
		}
		if t, err := time.Parse(time.RFC3339Nano, str(h.Fields[FieldMergedAt])); err == nil {
			hit.MergedAt = t.UTC()
		}
		for f, frags := range h.Fragments {
			if len(frags) > 0 {
				hit.Highlights[f] = frags
			}
		}
		out.Hits = append(out.Hits, hit)
	}
	return out, nil
}

// buildQuery checks q and makes the bleve query: the parsed text, and a
// term on the repo keyword when a repo is given.
func buildQuery(q Query) (query.Query, error) {
	if q.Repo != "" {
		if err := contracts.ValidateRepo(q.Repo); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadQuery, err)
		}
	}
	var repo query.Query
	if q.Repo != "" {
		t := bleve.NewTermQuery(q.Repo)
		t.SetField(FieldRepo)
		repo = t
	}
	if q.Text == "" && repo != nil {
		return repo, nil
	}
	text, err := parseQuery(q.Text)
	if err != nil {
		return nil, err
	}
	if repo == nil {
		return text, nil
	}
	return bleve.NewConjunctionQuery(text, repo), nil
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
// searches) and fuzziness outside 0 to bleve's maximum ("a~-1" parses).
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
		if err := checkPattern(q.Regexp); err != nil {
			return fmt.Errorf("regexp /%s/: %w", q.Regexp, err)
		}
	case *query.WildcardQuery:
		// bleve runs a wildcard as a regexp through the same automaton.
		if err := checkPattern(wildcardRegexp(q.Wildcard)); err != nil {
			return fmt.Errorf("wildcard %s: %w", q.Wildcard, err)
		}
	case *query.MatchQuery:
		if err := checkFuzziness(q.Fuzziness); err != nil {
			return err
		}
	case *query.FuzzyQuery:
		if err := checkFuzziness(q.Fuzziness); err != nil {
			return err
		}
	}
	if v, ok := q.(query.ValidatableQuery); ok {
		return v.Validate()
	}
	return nil
}

// MaxPatternInsts bounds a regexp or wildcard of a search, counted as Go's
// regexp compiler counts instructions ("/[a-z]{3,40}/" is 79,
// "internal/*.go" 14). The index builds an automaton of up to 10,000 states
// for a pattern, at a cost that grows with the pattern's size: measured,
// up to about a second of CPU at this bound, several at 400 bytes of
// wildcard.
const MaxPatternInsts = 100

// checkPattern refuses a regexp the index's automaton cannot run (syntax
// it lacks, more states than it allows) or that is larger than
// MaxPatternInsts.
func checkPattern(expr string) error {
	parsed, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return err
	}
	prog, err := syntax.Compile(parsed.Simplify())
	if err != nil {
		return err
	}
	if n := len(prog.Inst); n > MaxPatternInsts {
		return fmt.Errorf("too complex: %d instructions (at most %d)", n, MaxPatternInsts)
	}
	_, err = vellumregexp.NewParsedWithLimit(expr, parsed, vellumregexp.DefaultLimit)
	if errors.Is(err, vellumregexp.ErrTooManyStates) {
		return fmt.Errorf("too complex: the index's automaton for it needs more than %d states", vellumregexp.StateLimit)
	}
	return err
}

// wildcardRegexp is the regexp a wildcard means: '*' any run of
// characters, '?' one character, every other byte itself (byte by byte, so
// that a wildcard that is not UTF-8 stays as bleve will see it).
func wildcardRegexp(w string) string {
	var b strings.Builder
	for i := range len(w) {
		switch c := w[i : i+1]; c {
		case "*":
			b.WriteString(".*")
		case "?":
			b.WriteByte('.')
		default:
			b.WriteString(regexp.QuoteMeta(c))
		}
	}
	return b.String()
}

// queryErrors are what bleve's searchers return, unwrapped, for a query
// their automata cannot run. checkQuery refuses the queries it can tell
// beforehand; these catch the rest as the caller's mistake, not the
// index's failure.
var queryErrors = []error{
	vellumregexp.ErrTooManyStates, vellumregexp.ErrCompiledTooBig, vellumregexp.ErrNoEmpty,
	vellumregexp.ErrNoWordBoundary, vellumregexp.ErrNoBytes, vellumregexp.ErrNoLazy,
	levenshtein.ErrTooManyStates,
}

// isQueryError reports whether a search failed on its query.
func isQueryError(err error) bool {
	var syn *syntax.Error
	if errors.As(err, &syn) {
		return true
	}
	for _, e := range queryErrors {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

func checkFuzziness(f int) error {
	if f < 0 || f > searcher.MaxFuzziness {
		return fmt.Errorf("fuzziness %d is not from 0 to %d", f, searcher.MaxFuzziness)
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

// finite maps a score bleve computed as NaN or ±Inf (a query boosted by 0,
// say) to 0: JSON has no such numbers.
func finite(f float64) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return f
}
