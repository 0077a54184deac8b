// Package ydbcheck type-checks an adapter's YQL statements offline, with no
// server: the result column types of each statement are derived from the
// tables its migrations create and from YQL's typing rules, and the
// adapter's own scan function is run on rows of those types through the
// SDK's conversion (types.CastTo, what row.Scan uses); each parameter's type,
// as the adapter builds it, is compared with the column it meets.
//
// It knows the subset of YQL the adapters write — and refuses, with an
// error, what it cannot type (an expression in a select list, a parameter
// in a position it has no rule for), so that a new shape of statement has to
// be taught to it (and reasoned about) before it can pass. It types
// parameters by the column they are compared with; an expression around a
// parameter ($cut + Interval(...)) is not looked into. It checks types, not
// plans.
package ydbcheck

import (
	"fmt"
	"regexp"
	"strings"
)

// Type is a YQL type the adapters use: a primitive (Utf8, String,
// Timestamp, Int64, Uint64, Uint32, Bool), maybe Optional; or a List or a
// Struct of them (parameters only).
type Type struct {
	Name     string // primitive name, "List" or "Struct"
	Optional bool
	Item     *Type       // of a List
	Fields   []FieldType // of a Struct, in name order
}

// FieldType is one member of a Struct.
type FieldType struct {
	Name string
	Type Type
}

func (t Type) String() string {
	var s string
	switch t.Name {
	case "List":
		s = "List<" + t.Item.String() + ">"
	case "Struct":
		parts := make([]string, len(t.Fields))
		for i, f := range t.Fields {
			parts[i] = f.Name + ":" + f.Type.String()
		}
		s = "Struct<" + strings.Join(parts, ",") + ">"
	default:
		s = t.Name
	}
	if t.Optional {
		return "Optional<" + s + ">"
	}
	return s
}

// Required is t without Optional.
func (t Type) Required() Type { t.Optional = false; return t }

// Column of a table.
type Column struct {
	Name string
	Type Type // Optional unless declared NOT NULL
}

// Table as its CREATE TABLE statement declares it.
type Table struct {
	Name    string
	Columns []Column
	Key     []string
	Indexes map[string]Index
	// Settings of WITH (…) and of later ALTER TABLE … SET (…), by name
	// (AUTO_PARTITIONING_BY_LOAD → ENABLED), as written.
	Settings map[string]string
}

// Index is a secondary index: its key columns and covered columns.
type Index struct {
	Key, Cover []string
	Async      bool
}

// Column returns the named column.
func (t *Table) Column(name string) (Column, bool) {
	for _, c := range t.Columns {
		if c.Name == name {
			return c, true
		}
	}
	return Column{}, false
}

// Schema is the tables of one directory.
type Schema map[string]*Table

var primitives = map[string]bool{"Utf8": true, "Text": true, "String": true, "Bytes": true, "Timestamp": true,
	"Int64": true, "Uint64": true, "Uint32": true, "Uint16": true, "Int32": true, "Bool": true}

var (
	createRE = regexp.MustCompile(`(?s)CREATE TABLE IF NOT EXISTS (\w+) \((.*)\)`)
	indexRE  = regexp.MustCompile(`^INDEX (\w+) GLOBAL (SYNC |ASYNC )?ON \(([^)]*)\)( COVER \(([^)]*)\))?$`)
)

// LoadSchema applies, in order, the CREATE TABLE and ALTER TABLE
// statements among stmts (other statements of a migration are skipped; an
// ALTER TABLE it does not know is refused); ydb.SchemaStatements gives
// those of a directory.
func LoadSchema(stmts []string, err error) (Schema, error) {
	if err != nil {
		return nil, err
	}
	s := Schema{}
	for _, st := range stmts {
		st = stripComments(st)
		switch {
		case strings.Contains(st, "ALTER TABLE"):
			if err := s.alter(st); err != nil {
				return nil, err
			}
			continue
		case !strings.Contains(st, "CREATE TABLE"):
			continue
		}
		t, err := parseCreate(st)
		if err != nil {
			return nil, err
		}
		s[t.Name] = t
	}
	return s, nil
}

func stripComments(yql string) string {
	var b strings.Builder
	for _, line := range strings.Split(yql, "\n") {
		if i := strings.Index(line, "--"); i >= 0 {
			line = line[:i]
		}
		b.WriteString(line)
		b.WriteString("\n")
	}
	return b.String()
}

// parseCreate reads the body of CREATE TABLE up to its closing parenthesis
// (a WITH clause after it is the table's settings, not columns).
func parseCreate(yql string) (*Table, error) {
	m := createRE.FindStringSubmatch(yql)
	if m == nil {
		return nil, fmt.Errorf("not a CREATE TABLE IF NOT EXISTS: %.60q", yql)
	}
	t := &Table{Name: m[1], Indexes: map[string]Index{}, Settings: map[string]string{}}
	body := m[2]
	// Cut at the parenthesis that closes the column list; what follows may
	// be WITH (settings).
	depth := 0
	for i, r := range body {
		if r == '(' {
			depth++
		} else if r == ')' {
			if depth == 0 {
				if err := t.setWith(body[i+1:]); err != nil {
					return nil, err
				}
				body = body[:i]
				break
			}
			depth--
		}
	}
	for _, item := range splitTop(body) {
		item = strings.Join(strings.Fields(item), " ")
		switch {
		case item == "":
		case strings.HasPrefix(item, "PRIMARY KEY"):
			t.Key = names(strings.TrimSuffix(strings.TrimPrefix(item, "PRIMARY KEY ("), ")"))
		case strings.HasPrefix(item, "INDEX "):
			if err := t.addIndex(item); err != nil {
				return nil, err
			}
		default:
			f := strings.Fields(item)
			if len(f) < 2 || !primitives[f[1]] {
				return nil, fmt.Errorf("table %s: column %q not understood", t.Name, item)
			}
			typ := Type{Name: canonical(f[1]), Optional: !strings.HasSuffix(item, " NOT NULL")}
			t.Columns = append(t.Columns, Column{Name: f[0], Type: typ})
		}
	}
	for _, k := range t.Key {
		if _, ok := t.Column(k); !ok {
			return nil, fmt.Errorf("table %s: key column %s not declared", t.Name, k)
		}
	}
	return t, nil
}

// addIndex adds the index an "INDEX name GLOBAL [SYNC|ASYNC] ON (…)
// [COVER (…)]" item declares, over columns the table has.
func (t *Table) addIndex(item string) error {
	im := indexRE.FindStringSubmatch(item)
	if im == nil {
		return fmt.Errorf("table %s: index %q not understood", t.Name, item)
	}
	if _, dup := t.Indexes[im[1]]; dup {
		return fmt.Errorf("table %s: index %s declared twice", t.Name, im[1])
	}
	ix := Index{Key: names(im[3]), Cover: names(im[5]), Async: im[2] == "ASYNC "}
	for _, c := range append(append([]string{}, ix.Key...), ix.Cover...) {
		if _, ok := t.Column(c); !ok {
			return fmt.Errorf("table %s: index %s names unknown column %s", t.Name, im[1], c)
		}
	}
	t.Indexes[im[1]] = ix
	return nil
}

func canonical(name string) string {
	switch name {
	case "Text":
		return "Utf8"
	case "Bytes":
		return "String"
	}
	return name
}

// splitTop splits at commas outside parentheses.
func splitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

func names(list string) []string {
	var out []string
	for _, n := range strings.Split(list, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}
