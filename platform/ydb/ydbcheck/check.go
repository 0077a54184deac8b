package ydbcheck

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	ydbsdk "github.com/ydb-platform/ydb-go-sdk/v3"
	"github.com/ydb-platform/ydb-go-sdk/v3/query"
	"github.com/ydb-platform/ydb-go-sdk/v3/types"
)

// Case is one statement of an adapter as the adapter runs it.
type Case struct {
	// Name is the Go constant (or variable) holding the statement, maybe
	// followed by " (what differs)" for another binding of it.
	Name string
	YQL  string
	// Params are the statement's parameters as the adapter builds them
	// (with sample values); nil when it takes none.
	Params ydbsdk.Params
	// Scan is the adapter's own function that reads one row of the
	// statement's result; nil for a statement that returns no rows.
	Scan func(query.Row) error
	// Scans says why reading the whole table (or index) is right for this
	// statement (a table of a few rows, a background sweep); a statement
	// whose WHERE does not bind the first column of the key it reads is
	// refused without it, and one that reads key ranges refused with it.
	Scans string
}

// Run checks every case against the schema, and that cases cover exactly
// the statements declared in the package's files (constants and variables
// named q…), so that a statement nobody listed fails the test.
func Run(t *testing.T, schema Schema, declared []string, cases []Case) {
	t.Helper()
	var listed []string
	for _, c := range cases {
		// "qX (variant)" is another binding of qX's statement.
		base, _, _ := strings.Cut(c.Name, " (")
		listed = append(listed, base)
		t.Run(c.Name, func(t *testing.T) {
			if err := Check(schema, c); err != nil {
				t.Error(err)
			}
		})
	}
	for _, d := range declared {
		if !slices.Contains(listed, d) {
			t.Errorf("statement %s is not in the type check's table", d)
		}
	}
	for _, l := range listed {
		if !slices.Contains(declared, l) {
			t.Errorf("the table lists %s, which the package does not declare", l)
		}
	}
}

// Check types one case: its result columns through its scan function,
// its parameters against their columns.
func Check(schema Schema, c Case) error {
	ty, err := schema.TypeOf(c.YQL)
	if err != nil {
		return err
	}
	var errs []error
	errs = append(errs, checkParams(ty, c.Params)...)
	switch {
	case ty.FullScan != "" && c.Scans == "":
		errs = append(errs, fmt.Errorf("reads the whole table: %s (bind it, or say in the case why a full read is right)", ty.FullScan))
	case ty.FullScan == "" && c.Scans != "":
		errs = append(errs, fmt.Errorf("the case says it scans (%s) but it reads key points or ranges", c.Scans))
	}
	switch {
	case len(ty.Result) == 0 && c.Scan != nil:
		errs = append(errs, errors.New("a scan function for a statement that returns no rows"))
	case len(ty.Result) > 0 && c.Scan == nil:
		errs = append(errs, fmt.Errorf("returns %s but the case names no scan function", describe(ty.Result)))
	case len(ty.Result) > 0:
		errs = append(errs, checkScan(ty.Result, c.Scan)...)
	}
	return errors.Join(errs...)
}

func describe(cols []Column) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = c.Name + " " + c.Type.String()
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// checkScan runs scan on rows of the derived types: one with every value
// present, and for each Optional column one where it is NULL.
func checkScan(cols []Column, scan func(query.Row) error) []error {
	rows := [][]types.Value{sampleRow(cols, -1)}
	for i, c := range cols {
		if c.Type.Optional {
			rows = append(rows, sampleRow(cols, i))
		}
	}
	var errs []error
	for _, vals := range rows {
		r := &Row{Cols: cols, Vals: vals}
		err := scan(r)
		switch {
		case !r.Scanned:
			errs = append(errs, fmt.Errorf("the scan function did not call Scan (it returned %v)", err))
		case r.Err != nil:
			errs = append(errs, fmt.Errorf("row %s: %w", describe(cols), r.Err))
		}
	}
	return errs
}

var sampleTime = time.Date(2030, 1, 2, 3, 4, 5, 6000, time.UTC)

// Sample is a value of a primitive type (present).
func Sample(t Type) types.Value {
	var v types.Value
	switch t.Name {
	case "Utf8":
		v = types.TextValue("x")
	case "String":
		v = types.BytesValue([]byte("x"))
	case "Timestamp":
		v = types.TimestampValueFromTime(sampleTime)
	case "Int64":
		v = types.Int64Value(7)
	case "Int32":
		v = types.Int32Value(7)
	case "Uint64":
		v = types.Uint64Value(7)
	case "Uint32":
		v = types.Uint32Value(7)
	case "Uint16":
		v = types.Uint16Value(7)
	case "Bool":
		v = types.BoolValue(true)
	default:
		panic("ydbcheck: no sample of " + t.Name)
	}
	if t.Optional {
		return types.OptionalValue(v)
	}
	return v
}

func sampleRow(cols []Column, null int) []types.Value {
	vals := make([]types.Value, len(cols))
	for i, c := range cols {
		if i == null {
			vals[i] = types.NullValue(sdkType(c.Type.Required()))
			continue
		}
		vals[i] = Sample(c.Type)
	}
	return vals
}

// sdkTypes are the SDK's types of the primitive YQL types the schemas use.
var sdkTypes = map[string]types.Type{
	"Utf8": types.TypeText, "String": types.TypeBytes, "Timestamp": types.TypeTimestamp,
	"Int64": types.TypeInt64, "Int32": types.TypeInt32, "Uint64": types.TypeUint64,
	"Uint32": types.TypeUint32, "Uint16": types.TypeUint16, "Bool": types.TypeBool,
}

func sdkType(t Type) types.Type {
	st, ok := sdkTypes[t.Name]
	switch {
	case t.Name == "List":
		st = types.List(sdkType(*t.Item))
	case !ok:
		panic("ydbcheck: no SDK type for " + t.Name)
	}
	if t.Optional {
		return types.Optional(st)
	}
	return st
}

// checkParams compares the parameters the adapter builds with the rules:
// the same names, and each value's type as the rule says.
func checkParams(ty Typed, p ydbsdk.Params) []error {
	got := map[string]types.Value{}
	if p != nil {
		for name, v := range p.Range() {
			got[name] = v
		}
	}
	return fitAll(ty.Params, got, "parameter", "is not bound", "is bound but the statement does not use it")
}

// fitAll checks values against rules by name (what: "parameter",
// "member"); missing says what is wrong with a rule no value answers,
// unused with a value no rule reads.
func fitAll(rules map[string]ParamRule, vals map[string]types.Value, what, missing, unused string) []error {
	var errs []error
	for name, rule := range rules {
		v, ok := vals[name]
		if !ok {
			errs = append(errs, fmt.Errorf("%s %s (%s) %s", what, name, rule.Why, missing))
			continue
		}
		if err := fits(rule, v); err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", what, name, err))
		}
	}
	for name := range vals {
		if _, ok := rules[name]; !ok {
			errs = append(errs, fmt.Errorf("%s %s %s", what, name, unused))
		}
	}
	return errs
}

func fits(rule ParamRule, v types.Value) error {
	if rule.Fields != nil {
		items, err := types.ListItems(v)
		if err != nil {
			return fmt.Errorf("%s wants a List<Struct>, got %s", rule.Why, v.Type().Yql())
		}
		if len(items) == 0 {
			return fmt.Errorf("%s: bind at least one sample row to check its members", rule.Why)
		}
		fields, err := types.StructFields(items[0])
		if err != nil {
			return fmt.Errorf("%s wants a List<Struct>, got %s", rule.Why, v.Type().Yql())
		}
		return errors.Join(fitAll(rule.Fields, fields, "member", "missing from "+v.Type().Yql(), "is bound but not read")...)
	}
	want := sdkType(rule.Type)
	got := v.Type()
	if !types.Equal(want, got) && !(rule.OrOptional && types.Equal(types.Optional(want), got)) {
		return fmt.Errorf("bound as %s, %s wants %s", got.Yql(), rule.Why, want.Yql())
	}
	return inRange(v)
}

// YQL's Timestamp runs from the Unix epoch to the start of 2106.
var (
	minTimestamp = time.Unix(0, 0).UTC()
	maxTimestamp = time.Date(2106, 1, 1, 0, 0, 0, 0, time.UTC)
)

// inRange refuses a Timestamp the server would refuse: the SDK converts
// a time.Time before the epoch (the zero time.Time, say) to microseconds
// without complaint.
func inRange(v types.Value) error {
	if types.IsNull(v) {
		return nil
	}
	if _, inner := types.IsOptional(v.Type()); inner != nil && types.Equal(inner, types.TypeTimestamp) ||
		types.Equal(v.Type(), types.TypeTimestamp) {
		var at time.Time
		if err := types.CastTo(v, &at); err != nil {
			return err
		}
		if at.Before(minTimestamp) || !at.Before(maxTimestamp) {
			return fmt.Errorf("Timestamp %s is outside YQL's range [1970, 2106)", at.Format(time.RFC3339Nano))
		}
	}
	return nil
}

// Row is a result row of given column types for a scan function. Its Scan
// converts with the SDK's types.CastTo, as the SDK's own rows do, and
// records the first conversion error.
type Row struct {
	Cols    []Column
	Vals    []types.Value
	Scanned bool
	Err     error
}

var _ query.Row = (*Row)(nil)

// Values are the row's values.
func (r *Row) Values() []types.Value { return r.Vals }

// Scan converts each value into its destination.
func (r *Row) Scan(dst ...any) error {
	r.Scanned = true
	if len(dst) != len(r.Vals) {
		r.Err = fmt.Errorf("%d destinations for %d columns", len(dst), len(r.Vals))
		return r.Err
	}
	for i, d := range dst {
		if err := types.CastTo(r.Vals[i], d); err != nil {
			r.Err = fmt.Errorf("column %s (%s) into %T: %w", r.Cols[i].Name, r.Vals[i].Type().Yql(), d, err)
			return r.Err
		}
	}
	return nil
}

// ScanNamed converts the named columns.
func (r *Row) ScanNamed(dst ...query.NamedDestination) error {
	r.Scanned = true
	for _, d := range dst {
		i := slices.IndexFunc(r.Cols, func(c Column) bool { return c.Name == d.Name() })
		if i < 0 {
			r.Err = fmt.Errorf("no column %s", d.Name())
			return r.Err
		}
		if err := types.CastTo(r.Vals[i], d.Ref()); err != nil {
			r.Err = fmt.Errorf("column %s (%s) into %T: %w", d.Name(), r.Vals[i].Type().Yql(), d.Ref(), err)
			return r.Err
		}
	}
	return nil
}

// ScanStruct is not used by the adapters; refusing it keeps the check
// honest.
func (r *Row) ScanStruct(any, ...query.ScanStructOption) error {
	r.Scanned = true
	r.Err = errors.New("ydbcheck: ScanStruct is not checked; scan with Scan")
	return r.Err
}

// Declared lists the statements declared in the package's non-test Go
// files of dir: every constant or variable whose name starts with q and
// a capital or lower-case letter after it (qSaga, qPutLock). It also fails
// when a call to Exec, Query, QueryRow or QueryResultSet passes a
// statement written inline (a string literal), which the table could not
// list.
func Declared(dir string) ([]string, error) {
	names, _, err := declared(dir)
	return names, err
}

// declared is Declared, and which of the statements are declared of the
// type Stale (ydb.Stale: the statements that may only run in a stale
// read-only transaction).
func declared(dir string) ([]string, map[string]bool, error) {
	stale := map[string]bool{}
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, nil, err
	}
	var out []string
	var errs []error
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			return nil, nil, err
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || (g.Tok != token.CONST && g.Tok != token.VAR) {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for _, id := range vs.Names {
					if isStatementName(id.Name) {
						out = append(out, id.Name)
						stale[id.Name] = isStaleType(vs.Type)
					}
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || !slices.Contains([]string{"Exec", "Query", "QueryRow", "QueryResultSet"}, sel.Sel.Name) {
				return true
			}
			for _, a := range call.Args {
				if inlineText(a) {
					errs = append(errs, fmt.Errorf("%s: a statement written inline; declare it as a q… constant", fset.Position(a.Pos())))
				}
				if ce, ok := a.(*ast.CallExpr); ok {
					if id, ok := ce.Fun.(*ast.SelectorExpr); ok && id.Sel.Name == "yql" && len(ce.Args) == 1 {
						if lit, ok := ce.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							errs = append(errs, fmt.Errorf("%s: a statement written inline; declare it as a q… constant", fset.Position(lit.Pos())))
						}
					}
				}
			}
			return true
		})
	}
	slices.Sort(out)
	return out, stale, errors.Join(errs...)
}

// isStaleType: the declared type is Stale (in package ydb) or ydb.Stale
// under whatever name the file imports it.
func isStaleType(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name == "Stale"
	case *ast.SelectorExpr:
		return e.Sel.Name == "Stale"
	}
	return false
}

// inlineText: a string literal, or text joined with one ("SELECT " + x).
func inlineText(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.BasicLit:
		return e.Kind == token.STRING
	case *ast.BinaryExpr:
		return e.Op == token.ADD && (inlineText(e.X) || inlineText(e.Y))
	case *ast.ParenExpr:
		return inlineText(e.X)
	}
	return false
}

func isStatementName(n string) bool {
	return len(n) > 1 && n[0] == 'q' && n[1] >= 'A' && n[1] <= 'Z'
}
