package engine

import (
	"bytes"
	"context"
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// Merge attributes. git decides how to merge a file's contents by its
// `merge` attribute, read from gitattributes(5) files; this file reads them
// as git does and answers that one question. Every other attribute (text,
// eol, diff, linguist-*, …) leaves a merge alone: without merge.renormalize
// git merges the blobs' bytes as they are.
//
// Which files: the repository's info/attributes (highest precedence), then
// the .gitattributes files of the TARGET's tree (ours) on the path, the
// deepest first. The target's, because a forge merges into the target
// branch: its attributes are the repository's policy at the moment of the
// merge, as for git ≥2.42 in a bare repository (attr.tree defaults to
// HEAD) and for `git merge` in a work tree checked out at the target; and
// because a PR must not be able to switch conflict detection off for its
// own merge by adding `* merge=union` to its branch. (git 2.39 in a bare
// repository reads info/attributes only; the differential tests run git
// with a work tree holding ours' .gitattributes files, which is the rule
// above.)
//
// Evaluation, as gitattributes(5) describes it: sources from highest to
// lowest precedence, each file's lines from last to first, each line's
// assignments from last to first; the first assignment an attribute gets
// is final (`!attr` counts: it resets to unspecified). A macro assigned
// "set" assigns its own attributes at that point, with the precedence of
// the line that set it. `binary` is the built-in macro `-diff -merge
// -text`; macros ([attr]name …) may be defined in the root .gitattributes
// and in info/attributes.

// attrState is an attribute's value: set, unset, a string, or unspecified.
type attrState struct {
	kind  attrKind
	value string // attrValue's
}

type attrKind uint8

const (
	attrUnspecified attrKind = iota
	attrSet
	attrUnset
	attrValue
)

type attrAssign struct {
	name  string
	state attrState
}

type attrRule struct {
	match func(rel string) bool // rel: the path relative to the file's directory
	set   []attrAssign
}

// attrFile is one attributes file: the directory it applies below ("" for
// the root and info/attributes) and its rules in file order.
type attrFile struct {
	dir   string
	rules []attrRule
}

// mergeAttributes answers the merge attribute for the paths of one merge.
type mergeAttributes struct {
	r        *repo
	root     plumbing.Hash // the tree whose .gitattributes apply: ours
	info     *attrFile     // info/attributes, or nil
	macros   map[string][]attrAssign
	dirs     map[string]*attrFile // by directory; nil: none there
	fallback attrState            // merge.default: what "unspecified" means
	drivers  map[string]bool      // merge.<name>.driver configured: git runs it, even for text/union/binary
}

// Limits git (since 2.39.1) puts on attributes files: lines of 2048 bytes
// or more, and larger files, are ignored.
const (
	maxAttrLine     = 2048
	maxAttrFileSize = 100 << 20
)

// maxMacroDepth bounds macro expansion (a macro may name another, or itself).
const maxMacroDepth = 32

func (r *repo) newMergeAttributes(root plumbing.Hash) (*mergeAttributes, error) {
	a := &mergeAttributes{
		r: r, root: root, dirs: map[string]*attrFile{},
		macros: map[string][]attrAssign{"binary": {
			{"diff", attrState{kind: attrUnset}}, {"merge", attrState{kind: attrUnset}}, {"text", attrState{kind: attrUnset}},
		}},
	}
	cfg, err := r.config()
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	a.drivers = map[string]bool{}
	if cfg.Raw != nil {
		sec := cfg.Raw.Section("merge")
		if d := sec.Options.Get("default"); d != "" {
			a.fallback = attrState{kind: attrValue, value: d}
		}
		for _, sub := range sec.Subsections {
			if sub.Options.Has("driver") {
				a.drivers[sub.Name] = true
			}
		}
	}
	// Macros of the root .gitattributes first: info/attributes', read
	// after, take precedence over them.
	rootFile, err := a.load("")
	if err != nil {
		return nil, err
	}
	a.dirs[""] = rootFile
	info, err := readOptional(r.s.Dir(), "info", "attributes")
	if err != nil {
		return nil, err
	}
	if len(info) > 0 {
		a.info = a.parse("", info, true)
	}
	return a, nil
}

// load reads and parses the .gitattributes of directory dir of the root
// tree, if there is one.
func (a *mergeAttributes) load(dir string) (*attrFile, error) {
	h := a.root
	if dir != "" {
		for _, part := range strings.Split(dir, "/") {
			entries, err := a.r.readTree(h)
			if err != nil {
				return nil, err
			}
			e, ok := entries[part]
			if !ok || !e.isDir() {
				return nil, nil
			}
			h = e.hash
		}
	}
	entries, err := a.r.readTree(h)
	if err != nil {
		return nil, err
	}
	e, ok := entries[".gitattributes"]
	if !ok || !e.isRegular() { // git does not follow a symlinked .gitattributes in a tree
		return nil, nil
	}
	text, err := a.r.readBlob(e.hash)
	if err != nil {
		return nil, err
	}
	return a.parse(dir, []byte(text), dir == ""), nil
}

// merge returns the merge attribute of file p.
func (a *mergeAttributes) merge(p string) (attrState, error) {
	// The files from highest precedence to lowest.
	var files []*attrFile
	if a.info != nil {
		files = append(files, a.info)
	}
	dir := path.Dir(p)
	if dir == "." {
		dir = ""
	}
	for {
		f, ok := a.dirs[dir]
		if !ok {
			var err error
			if f, err = a.load(dir); err != nil {
				return attrState{}, err
			}
			a.dirs[dir] = f
		}
		if f != nil {
			files = append(files, f)
		}
		if dir == "" {
			break
		}
		if dir = path.Dir(dir); dir == "." {
			dir = ""
		}
	}
	got := map[string]attrState{}
	var fill func(set []attrAssign, depth int)
	fill = func(set []attrAssign, depth int) {
		for i := len(set) - 1; i >= 0; i-- {
			as := set[i]
			if _, done := got[as.name]; done {
				continue
			}
			got[as.name] = as.state
			if m, ok := a.macros[as.name]; ok && as.state.kind == attrSet && depth < maxMacroDepth {
				fill(m, depth+1)
			}
		}
	}
	for _, f := range files {
		rel := p
		if f.dir != "" {
			rel = strings.TrimPrefix(p, f.dir+"/")
		}
		for i := len(f.rules) - 1; i >= 0; i-- {
			if f.rules[i].match(rel) {
				fill(f.rules[i].set, 0)
			}
		}
		if _, ok := got["merge"]; ok {
			break
		}
	}
	st := got["merge"]
	if st.kind == attrUnspecified {
		st = a.fallback
	}
	return st, nil
}

// parse reads an attributes file of directory dir. Macro definitions are
// taken where git allows them (the root .gitattributes, info/attributes)
// and ignored elsewhere, as git ignores them; so are negative patterns,
// lines with an invalid attribute name, and patterns that only match
// directories (a merged path is a file).
func (a *mergeAttributes) parse(dir string, text []byte, macrosAllowed bool) *attrFile {
	f := &attrFile{dir: dir}
	if len(text) > maxAttrFileSize {
		return f // git ignores the whole file
	}
	for _, raw := range bytes.Split(text, []byte("\n")) {
		if len(raw) >= maxAttrLine {
			continue // git ignores the line
		}
		line := strings.TrimRight(string(raw), "\r")
		line = strings.TrimLeft(line, " \t")
		if line == "" || line[0] == '#' {
			continue
		}
		pat, rest, ok := cutPattern(line)
		if !ok {
			continue
		}
		set, ok := parseAssigns(rest)
		if !ok {
			continue
		}
		if name, isMacro := strings.CutPrefix(pat, "[attr]"); isMacro {
			if macrosAllowed && validAttrName(name) {
				a.macros[name] = set
			}
			continue
		}
		if strings.HasPrefix(pat, "!") {
			continue // negative patterns are ignored in attributes
		}
		match, ok := compilePattern(pat)
		if !ok {
			continue
		}
		f.rules = append(f.rules, attrRule{match: match, set: set})
	}
	return f
}

// cutPattern splits a line into its pattern (unquoted if C-quoted) and the
// rest.
func cutPattern(line string) (pat, rest string, ok bool) {
	if line[0] == '"' {
		// The quoted pattern ends at the first unescaped quote.
		end := -1
		for i := 1; i < len(line); i++ {
			if line[i] == '\\' {
				i++
				continue
			}
			if line[i] == '"' {
				end = i
				break
			}
		}
		if end < 0 {
			return "", "", false
		}
		p, err := strconv.Unquote(line[:end+1])
		if err != nil {
			return "", "", false
		}
		return p, line[end+1:], true
	}
	i := strings.IndexAny(line, " \t")
	if i < 0 {
		return line, "", true
	}
	return line[:i], line[i:], true
}

func parseAssigns(s string) ([]attrAssign, bool) {
	var set []attrAssign
	for _, f := range strings.Fields(s) {
		var as attrAssign
		switch {
		case strings.HasPrefix(f, "-"):
			as = attrAssign{f[1:], attrState{kind: attrUnset}}
		case strings.HasPrefix(f, "!"):
			as = attrAssign{f[1:], attrState{kind: attrUnspecified}}
		default:
			name, value, hasValue := strings.Cut(f, "=")
			as = attrAssign{name, attrState{kind: attrSet}}
			if hasValue {
				as.state = attrState{kind: attrValue, value: value}
			}
		}
		if !validAttrName(as.name) {
			return nil, false // git drops the whole line
		}
		set = append(set, as)
	}
	return set, true
}

func validAttrName(n string) bool {
	if n == "" || n[0] == '-' {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !(c == '-' || c == '.' || c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

// compilePattern turns a gitattributes pattern into a matcher of paths
// relative to the file's directory: a pattern without a slash (but for a
// trailing one) matches the basename at any depth; any other is anchored
// to the directory; a trailing slash matches directories only, so never a
// file. Globs as in gitignore: * and ? do not cross a slash, ** does where
// it stands for whole path components, [...] classes.
func compilePattern(pat string) (func(string) bool, bool) {
	if strings.HasSuffix(pat, "/") {
		return nil, false
	}
	if !strings.Contains(pat, "/") {
		re, ok := globRegexp(pat)
		if !ok {
			return nil, false
		}
		return func(rel string) bool { return re.MatchString(path.Base(rel)) }, true
	}
	re, ok := globRegexp(strings.TrimPrefix(pat, "/"))
	if !ok {
		return nil, false
	}
	return re.MatchString, true
}

// globRegexp translates a wildmatch pattern (with WM_PATHNAME) to an
// anchored regular expression.
func globRegexp(pat string) (*regexp.Regexp, bool) {
	var b strings.Builder
	b.WriteString(`^`)
	for i := 0; i < len(pat); i++ {
		c := pat[i]
		switch c {
		case '*':
			j := i
			for j < len(pat) && pat[j] == '*' {
				j++
			}
			double := j-i >= 2
			atStart := i == 0 || pat[i-1] == '/'
			atEnd := j == len(pat) || pat[j] == '/'
			switch {
			case double && atStart && atEnd && j < len(pat):
				b.WriteString(`(?:.*/)?`) // "**/": any leading directories, or none
				j++
			case double && atStart && atEnd:
				b.WriteString(`.*`) // a trailing "/**"
			default:
				b.WriteString(`[^/]*`)
			}
			i = j - 1
		case '?':
			b.WriteString(`[^/]`)
		case '[':
			cls, n, ok := bracket(pat[i:])
			if !ok {
				b.WriteString(regexp.QuoteMeta("["))
				continue
			}
			b.WriteString(cls)
			i += n - 1
		case '\\':
			if i+1 < len(pat) {
				i++
				c = pat[i]
			}
			b.WriteString(regexp.QuoteMeta(string(c)))
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString(`$`)
	re, err := regexp.Compile(b.String())
	return re, err == nil
}

// bracket translates the class at the start of s ("[...]") and returns its
// length in s. A negated class never matches a slash (a positive class
// naming "/" is left as it is: git's would not match it either, but such a
// class is unheard of in attributes files).
func bracket(s string) (string, int, bool) {
	var b strings.Builder
	i := 1
	b.WriteString("[")
	if i < len(s) && (s[i] == '!' || s[i] == '^') {
		b.WriteString("^/")
		i++
	}
	for first := true; i < len(s); i, first = i+1, false {
		c := s[i]
		switch {
		case c == ']' && !first:
			b.WriteString("]")
			return b.String(), i + 1, true
		case c == '[' && i+1 < len(s) && s[i+1] == ':':
			end := strings.Index(s[i:], ":]")
			if end < 0 {
				return "", 0, false
			}
			b.WriteString(s[i : i+end+2])
			i += end + 1
		case c == '-' && !first && i+1 < len(s) && s[i+1] != ']':
			b.WriteByte('-') // a range
		case c == '\\' && i+1 < len(s):
			i++
			writeClassChar(&b, s[i])
		default:
			writeClassChar(&b, c)
		}
	}
	return "", 0, false
}

// writeClassChar writes a literal byte of a class, escaped if punctuation.
func writeClassChar(b *strings.Builder, c byte) {
	if c < 0x80 && !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
		b.WriteByte('\\')
	}
	b.WriteByte(c)
}

// mergeStyle says how the contents of file p, changed on both sides, merge:
// the line style, or why they do not (a conflict, as git's).
func (m *treeMerge) mergeStyle(p string) (lineStyle, string, error) {
	if m.renorm == nil {
		why, err := m.r.renormalizeConfig()
		if err != nil {
			return 0, "", err
		}
		m.renorm = &why
	}
	if *m.renorm != "" {
		return 0, *m.renorm, nil
	}
	if m.diff3 == nil {
		style, err := m.r.conflictStyleConfig()
		if err != nil {
			return 0, "", err
		}
		m.diff3 = &style
	}
	if m.attrs == nil {
		var err error
		if m.attrs, err = m.r.newMergeAttributes(m.attrRoot); err != nil {
			return 0, "", err
		}
	}
	st, err := m.attrs.merge(p)
	if err != nil {
		return 0, "", err
	}
	switch {
	case st.kind == attrValue && m.attrs.drivers[st.value]:
		// A driver the repository's config defines: git runs it.
	case st.kind == attrUnspecified || st.kind == attrSet || st.kind == attrValue && st.value == "text":
		if *m.diff3 != "" {
			return lineStyleDiff3, "", nil
		}
		return lineStyleText, "", nil
	case st.kind == attrUnset || st.value == "binary":
		return 0, "content changed on both sides of a file whose merge attribute is binary (git does not merge it)", nil
	case st.value == "union":
		if *m.diff3 != "" {
			return 0, fmt.Sprintf("content changed on both sides of a file whose merge attribute is union, and merge.conflictStyle is %s (not supported; not merged line by line)", *m.diff3), nil
		}
		return lineStyleUnion, "", nil
	}
	return 0, fmt.Sprintf("content changed on both sides of a file with merge driver %q (custom merge drivers are not run)", st.value), nil
}

// renormalizeConfig: merge.renormalize makes git convert the three
// versions' line endings before merging them; that is not done here, so
// it turns line merges off.
func (r *repo) renormalizeConfig() (string, error) {
	cfg, err := r.config()
	if err != nil {
		return "", fmt.Errorf("read config: %w", err)
	}
	if cfg.Raw == nil || !cfg.Raw.Section("merge").Options.Has("renormalize") {
		return "", nil
	}
	switch strings.ToLower(cfg.Raw.Section("merge").Options.Get("renormalize")) {
	case "false", "no", "off", "0":
		return "", nil
	}
	return "content changed on both sides, and merge.renormalize is configured (not supported; not merged line by line)", nil
}

// conflictStyleConfig returns merge.conflictStyle if it is diff3 or
// zdiff3 (lower case), else "". With those styles git leaves a conflict
// whose two sides read the same a conflict (it does not refine conflicts
// as its default style does), and its union merge writes conflicts
// unrefined.
func (r *repo) conflictStyleConfig() (string, error) {
	cfg, err := r.config()
	if err != nil {
		return "", fmt.Errorf("read config: %w", err)
	}
	if cfg.Raw == nil {
		return "", nil
	}
	switch v := strings.ToLower(cfg.Raw.Section("merge").Options.Get("conflictStyle")); v {
	case "diff3", "zdiff3":
		return v, nil
	}
	return "", nil
}

// AttributesFiles returns the .gitattributes files of tree by path.
func (e *Engine) AttributesFiles(ctx context.Context, tree plumbing.Hash) (map[string]string, error) {
	r := e.r
	files := map[string]string{}
	var walk func(dir string, h plumbing.Hash) error
	walk = func(dir string, h plumbing.Hash) error {
		if err := canceled(ctx, "directory /"+dir); err != nil {
			return err
		}
		entries, err := r.readTree(h)
		if err != nil {
			return err
		}
		for name, e := range entries {
			p := path.Join(dir, name)
			switch {
			case e.isDir():
				if err := walk(p, e.hash); err != nil {
					return err
				}
			case name == ".gitattributes" && e.isRegular():
				if files[p], err = r.readBlob(e.hash); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk("", tree); err != nil {
		return nil, err
	}
	return files, nil
}

// MergeAttributes reads the merge attributes of tree as a merge with that
// attribute root does, and returns the lookup of a path's `merge`
// attribute in `git check-attr` terms: "unspecified", "set", "unset" or
// its value.
func (e *Engine) MergeAttributes(tree plumbing.Hash) (func(path string) (string, error), error) {
	attrs, err := e.r.newMergeAttributes(tree)
	if err != nil {
		return nil, err
	}
	return func(p string) (string, error) {
		st, err := attrs.merge(p)
		if err != nil {
			return "", err
		}
		switch st.kind {
		case attrSet:
			return "set", nil
		case attrUnset:
			return "unset", nil
		case attrValue:
			return st.value, nil
		}
		return "unspecified", nil
	}, nil
}

// LineMergeRefusal says why file p, changed on both sides of a merge with
// attribute root tree, would not be merged line by line ("" if it would).
func (e *Engine) LineMergeRefusal(tree plumbing.Hash, p string) (string, error) {
	m := &treeMerge{ctx: context.Background(), r: e.r, attrRoot: tree}
	_, why, err := m.mergeStyle(p)
	return why, err
}
