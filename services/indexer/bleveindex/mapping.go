package bleveindex

import (
	"fmt"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/custom"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/standard"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/regexp"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/single"
	"github.com/blevesearch/bleve/v2/mapping"
)

// Field names of a document in the index, usable in queries ("repo:...").
const (
	FieldPRID         = "pr_id"
	FieldRepo         = "repo"
	FieldPRNumber     = "pr_number"
	FieldTargetBranch = "target_branch"
	FieldSourceBranch = "source_branch"
	FieldTitle        = "title"
	FieldRequestedBy  = "requested_by"
	FieldMergeSHA     = "merge_sha"
	FieldChangedPaths = "changed_paths"
	FieldFiles        = "files"
	FieldMessages     = "messages"
	FieldMergedAt     = "merged_at"
)

// pathAnalyzer splits a path into its words at every character that is not
// a letter or a digit, so "internal/auth/token.go" is found by "auth",
// "token" or "go" (the standard analyzer would keep "token.go" whole).
const pathAnalyzer = "path"

// fileAnalyzer keeps a path or file name whole, lower-cased, so that
// "files:docs/flags.md" or a bare "flags.md" finds the PR that changed it.
const fileAnalyzer = "file"

// newMapping is the mapping of a new index. Only the fields below are
// indexed (no dynamic fields). Keyword fields hold one exact, case-sensitive
// term (so "repo:acme/widgets" matches the repo acme/widgets and nothing
// else); text fields are analysed into lower-case words. Every field but
// merged_at is also part of the default field, so a query without a field
// name searches them all (a bare number such as "42" finds PR number 42).
// The fields a hit shows are stored; title, changed_paths and messages
// also keep term vectors, for highlights.
//
// merged_at stays out of the default field: a time is indexed as 16 terms,
// its nanoseconds at each 4-bit precision step, nearly all of them unique to
// the document, and no query without a field name can reach them (the query
// string syntax has no range without a field, and a bare number is compared
// as a float's encoding, not a time's). Each write and each segment merge
// handled them all the same: without them BenchmarkIndexBatch64 allocates
// ~1,610 objects per document instead of ~1,800, Batch8 ~2,510 instead of
// ~2,750. An index keeps the mapping it was created with: an older one
// still has them in its default field.
func newMapping() (*mapping.IndexMappingImpl, error) {
	m := bleve.NewIndexMapping()
	m.DefaultAnalyzer = standard.Name
	if err := m.AddCustomTokenizer("path_words", map[string]any{
		"type":   regexp.Name,
		"regexp": `[\p{L}\p{N}]+`,
	}); err != nil {
		return nil, fmt.Errorf("path tokenizer: %w", err)
	}
	if err := m.AddCustomAnalyzer(pathAnalyzer, map[string]any{
		"type":          custom.Name,
		"tokenizer":     "path_words",
		"token_filters": []string{lowercase.Name},
	}); err != nil {
		return nil, fmt.Errorf("path analyzer: %w", err)
	}

	if err := m.AddCustomAnalyzer(fileAnalyzer, map[string]any{
		"type":          custom.Name,
		"tokenizer":     single.Name,
		"token_filters": []string{lowercase.Name},
	}); err != nil {
		return nil, fmt.Errorf("file analyzer: %w", err)
	}
	keyword := func(store bool) *mapping.FieldMapping {
		f := bleve.NewKeywordFieldMapping()
		f.Store = store
		return f
	}
	text := func(analyzer string, store bool) *mapping.FieldMapping {
		f := bleve.NewTextFieldMapping()
		f.Analyzer = analyzer
		f.Store = store
		return f
	}
	number := bleve.NewNumericFieldMapping()
	number.Store = false
	mergedAt := bleve.NewDateTimeFieldMapping()
	mergedAt.Store = true
	mergedAt.IncludeInAll = false

	d := bleve.NewDocumentStaticMapping()
	d.AddFieldMappingsAt(FieldPRID, keyword(false)) // the document id holds it too
	d.AddFieldMappingsAt(FieldRepo, keyword(true))
	d.AddFieldMappingsAt(FieldPRNumber, number)
	d.AddFieldMappingsAt(FieldTargetBranch, keyword(true))
	d.AddFieldMappingsAt(FieldSourceBranch, keyword(false))
	d.AddFieldMappingsAt(FieldMergeSHA, keyword(true))
	d.AddFieldMappingsAt(FieldRequestedBy, keyword(true))
	d.AddFieldMappingsAt(FieldTitle, text(standard.Name, true))
	d.AddFieldMappingsAt(FieldChangedPaths, text(pathAnalyzer, true))
	d.AddFieldMappingsAt(FieldFiles, text(fileAnalyzer, false))
	d.AddFieldMappingsAt(FieldMessages, text(standard.Name, true))
	d.AddFieldMappingsAt(FieldMergedAt, mergedAt)
	m.DefaultMapping = d
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("index mapping: %w", err)
	}
	return m, nil
}
