package ydbcheck

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Typed is what a statement reads and needs, as derived from its text and
// the schema.
type Typed struct {
	// Result columns of a SELECT, in order (none for a write).
	Result []Column
	// Params: what each $parameter must be. A parameter compared with an
	// Optional column may be that column's type or its Optional.
	Params map[string]ParamRule
	// View is the secondary index a SELECT reads (VIEW), Async whether that
	// index is ASYNC: readable only in a stale read-only transaction.
	View  string
	Async bool
	// FullScan says why the statement reads the whole table (or index):
	// its WHERE does not bind the first column of the key it reads; "" for
	// a read of key points or ranges.
	FullScan string
}

// ParamRule is the type a parameter must have.
type ParamRule struct {
	Type Type
	// OrOptional: Type or Optional<Type> both fit (a nullable column).
	OrOptional bool
	// Fields: a List<Struct> whose members must have these types (AS_TABLE).
	Fields map[string]ParamRule
	// Where the rule comes from, for messages.
	Why string
}

var (
	spaceRE   = regexp.MustCompile(`\s+`)
	paramRE   = regexp.MustCompile(`\$\w+`)
	identRE   = regexp.MustCompile(`^\w+$`)
	aggRE     = regexp.MustCompile(`^(COUNT|MIN|MAX)\((\*|\w+)\) AS (\w+)$`)
	aliasRE   = regexp.MustCompile(`^(\w+) AS (\w+)$`)
	cmpRE     = regexp.MustCompile(`(\w+) (=|<|<=|>|>=|!=) (\$\w+)`)
	inRE      = regexp.MustCompile(`(\w+) IN (\$\w+)`)
	tupleRE   = regexp.MustCompile(`\(([\w, ]+)\) (<|<=|>|>=|=) \(([\w$, ]+)\)`)
	boolRE    = regexp.MustCompile(`\((\$\w+) OR `)
	limitRE   = regexp.MustCompile(`LIMIT (\$\w+)$`)
	setRE     = regexp.MustCompile(`^(\w+) = (\$\w+)$`)
	asTableRE = regexp.MustCompile(`^SELECT (.+) FROM AS_TABLE\((\$\w+)\)$`)
)

// Normalize removes comments and folds white space.
func Normalize(yql string) string {
	return strings.TrimSpace(spaceRE.ReplaceAllString(stripComments(yql), " "))
}

// TypeOf derives what the statement reads and needs.
func (s Schema) TypeOf(yql string) (Typed, error) {
	parts := strings.Split(Normalize(yql), ";")
	if len(parts) == 1 {
		return s.typeOne(parts[0])
	}
	// A script of writes: its parameters are those of every statement.
	all := Typed{Params: map[string]ParamRule{}}
	for _, p := range parts {
		ty, err := s.typeOne(strings.TrimSpace(p))
		if err != nil {
			return Typed{}, err
		}
		if len(ty.Result) > 0 {
			return Typed{}, fmt.Errorf("a SELECT in a script of several statements: %q", p)
		}
		for name, r := range ty.Params {
			if _, dup := all.Params[name]; dup {
				return Typed{}, fmt.Errorf("parameter %s used by two statements of one script", name)
			}
			all.Params[name] = r
		}
	}
	return all, nil
}

func (s Schema) typeOne(q string) (Typed, error) {
	ty := Typed{Params: map[string]ParamRule{}}
	var err error
	switch {
	case strings.HasPrefix(q, "SELECT "):
		err = s.selectStmt(q, &ty)
	case strings.HasPrefix(q, "UPSERT INTO "):
		err = s.upsert(q, &ty)
	case strings.HasPrefix(q, "UPDATE "):
		err = s.update(q, &ty)
	case strings.HasPrefix(q, "DELETE FROM "):
		err = s.delete(q, &ty)
	default:
		err = fmt.Errorf("statement kind not understood")
	}
	if err != nil {
		return Typed{}, fmt.Errorf("%w in %q", err, q)
	}
	for _, p := range paramRE.FindAllString(q, -1) {
		if _, ok := ty.Params[p]; !ok {
			return Typed{}, fmt.Errorf("parameter %s: no typing rule covers its use in %q", p, q)
		}
	}
	return ty, nil
}

func (s Schema) table(name string) (*Table, error) {
	t, ok := s[name]
	if !ok {
		return nil, fmt.Errorf("table %s not in the migrations", name)
	}
	return t, nil
}

// clause returns the text between keyword and the first of the later
// keywords (or the end).
func clause(q, keyword string, later ...string) (string, bool) {
	i := strings.Index(q, keyword)
	if i < 0 {
		return "", false
	}
	rest := q[i+len(keyword):]
	end := len(rest)
	for _, k := range later {
		if j := strings.Index(rest, k); k != "" && j >= 0 && j < end {
			end = j
		}
	}
	return strings.TrimSpace(rest[:end]), true
}

func (s Schema) selectStmt(q string, ty *Typed) error {
	list, _ := clause(q, "SELECT ", " FROM ")
	from, _ := clause(q, " FROM ", " WHERE ", " GROUP BY ", " ORDER BY ", " LIMIT ")
	where, hasWhere := clause(q, " WHERE ", " GROUP BY ", " ORDER BY ", " LIMIT ")
	group, grouped := clause(q, " GROUP BY ", " ORDER BY ", " LIMIT ")
	order, ordered := clause(q, " ORDER BY ", " LIMIT ")
	f := strings.Fields(from)
	if len(f) != 1 && !(len(f) == 3 && f[1] == "VIEW") {
		return fmt.Errorf("FROM %q not understood (one table, maybe VIEW index)", from)
	}
	t, err := s.table(f[0])
	if err != nil {
		return err
	}
	if len(f) == 3 {
		ix, ok := t.Indexes[f[2]]
		if !ok {
			return fmt.Errorf("table %s has no index %s", t.Name, f[2])
		}
		ty.View, ty.Async = f[2], ix.Async
	}
	var groupCols []string
	if grouped {
		groupCols = names(group)
		for _, c := range groupCols {
			if _, ok := t.Column(c); !ok {
				return fmt.Errorf("GROUP BY unknown column %s", c)
			}
		}
	}
	for _, item := range splitTop(list) {
		item = strings.TrimSpace(item)
		col, err := resultColumn(t, item, grouped, groupCols)
		if err != nil {
			return err
		}
		ty.Result = append(ty.Result, col)
	}
	if hasWhere {
		if err := whereParams(t, where, ty); err != nil {
			return err
		}
	}
	ty.FullScan = fullScan(t, ty.View, where)
	if ordered {
		for _, o := range splitTop(order) {
			c := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSpace(o), " DESC"), " ASC")
			if _, ok := t.Column(c); !ok && !slices.ContainsFunc(ty.Result, func(r Column) bool { return r.Name == c }) {
				return fmt.Errorf("ORDER BY unknown column %s", c)
			}
		}
	}
	if m := limitRE.FindStringSubmatch(q); m != nil {
		// YQL's LIMIT takes an unsigned integer.
		ty.Params[m[1]] = ParamRule{Type: Type{Name: "Uint64"}, Why: "LIMIT"}
	}
	return nil
}

// resultColumn types one item of a SELECT list:
//   - a column: its declared type (Optional unless NOT NULL);
//   - COUNT(*): Uint64, never NULL;
//   - MIN/MAX(c): over a whole table (no GROUP BY) the aggregate of no rows
//     is NULL, so Optional<T>; with GROUP BY every group has a row, so the
//     column's own type — T for a NOT NULL column (not Optional).
func resultColumn(t *Table, item string, grouped bool, groupCols []string) (Column, error) {
	if m := aggRE.FindStringSubmatch(item); m != nil {
		if m[1] == "COUNT" {
			if m[2] != "*" {
				return Column{}, fmt.Errorf("COUNT(%s): only COUNT(*) is typed here", m[2])
			}
			return Column{Name: m[3], Type: Type{Name: "Uint64"}}, nil
		}
		c, ok := t.Column(m[2])
		if !ok {
			return Column{}, fmt.Errorf("%s of unknown column %s", m[1], m[2])
		}
		typ := c.Type
		if !grouped {
			typ.Optional = true
		}
		return Column{Name: m[3], Type: typ}, nil
	}
	name, alias := item, item
	if m := aliasRE.FindStringSubmatch(item); m != nil {
		name, alias = m[1], m[2]
	}
	if !identRE.MatchString(name) {
		return Column{}, fmt.Errorf("select item %q not understood", item)
	}
	c, ok := t.Column(name)
	if !ok {
		return Column{}, fmt.Errorf("select of unknown column %s of %s", name, t.Name)
	}
	if grouped && !slices.Contains(groupCols, name) {
		return Column{}, fmt.Errorf("column %s is neither grouped nor aggregated", name)
	}
	return Column{Name: alias, Type: c.Type}, nil
}

// whereParams types every parameter of a predicate by what it is compared
// with: a column (its type; Optional allowed if the column is nullable), a
// list after IN (List of the column's type), a tuple compared with a
// column tuple, or a bare boolean operand of OR.
func whereParams(t *Table, where string, ty *Typed) error {
	add := func(p string, r ParamRule) error {
		if prev, ok := ty.Params[p]; ok && prev.Type.String() != r.Type.String() {
			return fmt.Errorf("parameter %s is used as %s (%s) and as %s (%s)", p, prev.Type, prev.Why, r.Type, r.Why)
		}
		ty.Params[p] = r
		return nil
	}
	colRule := func(name, why string) (ParamRule, error) {
		c, ok := t.Column(name)
		if !ok {
			return ParamRule{}, fmt.Errorf("%s: unknown column %s of %s", why, name, t.Name)
		}
		return ParamRule{Type: c.Type.Required(), OrOptional: c.Type.Optional, Why: why + " " + name}, nil
	}
	for _, m := range tupleRE.FindAllStringSubmatch(where, -1) {
		cols, ps := names(m[1]), names(m[3])
		if len(cols) != len(ps) {
			return fmt.Errorf("tuple %s compared with %s", m[1], m[3])
		}
		for i := range cols {
			r, err := colRule(cols[i], "tuple compared with")
			if err != nil {
				return err
			}
			if err := add(ps[i], r); err != nil {
				return err
			}
		}
	}
	for _, m := range cmpRE.FindAllStringSubmatch(where, -1) {
		r, err := colRule(m[1], "compared with")
		if err != nil {
			return err
		}
		if err := add(m[3], r); err != nil {
			return err
		}
	}
	for _, m := range inRE.FindAllStringSubmatch(where, -1) {
		r, err := colRule(m[1], "IN over")
		if err != nil {
			return err
		}
		item := r.Type
		r.Type = Type{Name: "List", Item: &item}
		r.OrOptional = false
		if err := add(m[2], r); err != nil {
			return err
		}
	}
	for _, m := range boolRE.FindAllStringSubmatch(where, -1) {
		if err := add(m[1], ParamRule{Type: Type{Name: "Bool"}, Why: "operand of OR"}); err != nil {
			return err
		}
	}
	return nil
}

func (s Schema) upsert(q string, ty *Typed) error {
	rest := strings.TrimPrefix(q, "UPSERT INTO ")
	name := strings.Fields(rest)[0]
	t, err := s.table(name)
	if err != nil {
		return err
	}
	rest = strings.TrimSpace(strings.TrimPrefix(rest, name))
	var written []string
	switch {
	case strings.HasPrefix(rest, "("):
		cols, _ := clause(rest, "(", ")")
		vals, ok := clause(rest, "VALUES (", "")
		if !ok {
			return fmt.Errorf("UPSERT without VALUES")
		}
		vals = strings.TrimSuffix(vals, ")")
		cs, vs := names(cols), names(vals)
		if len(cs) != len(vs) {
			return fmt.Errorf("%d columns, %d values", len(cs), len(vs))
		}
		for i, c := range cs {
			col, ok := t.Column(c)
			if !ok {
				return fmt.Errorf("UPSERT of unknown column %s of %s", c, t.Name)
			}
			if !strings.HasPrefix(vs[i], "$") {
				return fmt.Errorf("value %q of %s is not a parameter", vs[i], c)
			}
			ty.Params[vs[i]] = ParamRule{Type: col.Type.Required(), OrOptional: col.Type.Optional, Why: "value of " + c}
			written = append(written, c)
		}
	default:
		if written, err = asTable(t, rest, ty, false); err != nil {
			return err
		}
	}
	return fullRow(t, written, "UPSERT")
}

// fullRow: an UPSERT may create the row, so it must carry the key and
// every NOT NULL column (YDB refuses it otherwise).
func fullRow(t *Table, written []string, what string) error {
	for _, c := range t.Columns {
		if (!c.Type.Optional || slices.Contains(t.Key, c.Name)) && !slices.Contains(written, c.Name) {
			return fmt.Errorf("%s into %s leaves out NOT NULL or key column %s", what, t.Name, c.Name)
		}
	}
	return nil
}

// asTable types SELECT items FROM AS_TABLE($p) written into t: $p is a List
// of Struct whose members feed the named columns.
//
// strict (UPDATE ON, DELETE ON, whose documentation asks the subquery's
// types to match the table's): a member for a nullable column must be
// Optional too.
func asTable(t *Table, sel string, ty *Typed, strict bool) ([]string, error) {
	m := asTableRE.FindStringSubmatch(sel)
	if m == nil {
		return nil, fmt.Errorf("source %q not understood (SELECT … FROM AS_TABLE($p))", sel)
	}
	fields := map[string]ParamRule{}
	var written []string
	for _, item := range splitTop(m[1]) {
		item = strings.TrimSpace(item)
		field, col := item, item
		if am := aliasRE.FindStringSubmatch(item); am != nil {
			field, col = am[1], am[2]
		}
		if !identRE.MatchString(field) {
			return nil, fmt.Errorf("item %q not understood", item)
		}
		c, ok := t.Column(col)
		if !ok {
			return nil, fmt.Errorf("unknown column %s of %s", col, t.Name)
		}
		r := ParamRule{Type: c.Type.Required(), OrOptional: c.Type.Optional, Why: "member " + field + " written to " + col}
		if strict {
			r = ParamRule{Type: c.Type, Why: "member " + field + " written to " + col + " (types must match)"}
		}
		if prev, ok := fields[field]; ok && prev.Type.String() != r.Type.String() {
			return nil, fmt.Errorf("member %s feeds columns of types %s and %s", field, prev.Type, r.Type)
		}
		if prev, ok := fields[field]; ok && !prev.OrOptional {
			r.OrOptional = false
		}
		fields[field] = r
		written = append(written, col)
	}
	ty.Params[m[2]] = ParamRule{Type: Type{Name: "List", Item: &Type{Name: "Struct"}}, Fields: fields, Why: "AS_TABLE"}
	return written, nil
}

// target reads the table a statement starting with verb writes, and
// returns it with the rest of the statement.
func (s Schema) target(q, verb string) (*Table, string, error) {
	rest := strings.TrimPrefix(q, verb)
	f := strings.Fields(rest)
	if len(f) == 0 {
		return nil, "", fmt.Errorf("%s without a table", strings.TrimSpace(verb))
	}
	t, err := s.table(f[0])
	if err != nil {
		return nil, "", err
	}
	return t, strings.TrimSpace(strings.TrimPrefix(rest, f[0])), nil
}

// onTarget reads the table of an UPDATE or DELETE and, in its ON form
// (on true), the columns the statement's SELECT writes.
func (s Schema) onTarget(q, verb string, ty *Typed) (t *Table, rest string, on bool, written []string, err error) {
	t, rest, err = s.target(q, verb)
	if err != nil || !strings.HasPrefix(rest, "ON ") {
		return t, rest, false, nil, err
	}
	written, err = asTable(t, strings.TrimPrefix(rest, "ON "), ty, true)
	return t, rest, true, written, err
}

func (s Schema) update(q string, ty *Typed) error {
	t, rest, on, written, err := s.onTarget(q, "UPDATE ", ty)
	if err != nil {
		return err
	}
	if on {
		for _, k := range t.Key {
			if !slices.Contains(written, k) {
				return fmt.Errorf("UPDATE ON %s without key column %s", t.Name, k)
			}
		}
		return nil
	}
	set, ok := clause(rest, "SET ", " WHERE ")
	if !ok {
		return fmt.Errorf("UPDATE without SET")
	}
	for _, a := range splitTop(set) {
		m := setRE.FindStringSubmatch(strings.TrimSpace(a))
		if m == nil {
			return fmt.Errorf("assignment %q not understood", a)
		}
		c, ok := t.Column(m[1])
		if !ok {
			return fmt.Errorf("SET of unknown column %s", m[1])
		}
		if slices.Contains(t.Key, c.Name) {
			return fmt.Errorf("SET of key column %s", c.Name)
		}
		ty.Params[m[2]] = ParamRule{Type: c.Type.Required(), OrOptional: c.Type.Optional, Why: "SET " + c.Name}
	}
	where, _ := clause(rest, " WHERE ", "")
	ty.FullScan = fullScan(t, "", where)
	if where != "" {
		return whereParams(t, where, ty)
	}
	return nil
}

func (s Schema) delete(q string, ty *Typed) error {
	t, rest, on, written, err := s.onTarget(q, "DELETE FROM ", ty)
	if err != nil {
		return err
	}
	if on {
		if !slices.Equal(written, t.Key) {
			return fmt.Errorf("DELETE ON %s with columns %v, want exactly the key %v", t.Name, written, t.Key)
		}
		return nil
	}
	where, ok := clause(rest, "WHERE ", "")
	if !ok {
		return fmt.Errorf("DELETE without WHERE")
	}
	ty.FullScan = fullScan(t, "", where)
	return whereParams(t, where, ty)
}
