package ydbcheck

// LoadPackage is what the type check of an adapter's package runs on: the
// schema of its migrations (stmts and err as ydb.SchemaStatements returns
// them) and the statements its non-test files in the current directory
// declare (Declared).
func LoadPackage(stmts []string, err error) (Schema, []string, error) {
	schema, err := LoadSchema(stmts, err)
	if err != nil {
		return nil, nil, err
	}
	declared, err := Declared(".")
	if err != nil {
		return nil, nil, err
	}
	return schema, declared, nil
}
