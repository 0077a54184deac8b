package ydbcheck

import (
	"fmt"
	"regexp"
	"strings"
)

// A later migration changes a table with ALTER TABLE: the forms the
// migrations use are applied to the schema, any other is refused (the
// check must not type statements against a schema it did not follow).
var (
	alterRE     = regexp.MustCompile(`^ALTER TABLE (\w+) (.*)$`)
	addIndexRE  = regexp.MustCompile(`^ADD (INDEX .*)$`)
	dropIndexRE = regexp.MustCompile(`^DROP INDEX (\w+)$`)
	alterSetRE  = regexp.MustCompile(`^SET \((.*)\)$`)
)

func (s Schema) alter(stmt string) error {
	m := alterRE.FindStringSubmatch(Normalize(stmt))
	if m == nil {
		return fmt.Errorf("ALTER TABLE not understood: %.80q", Normalize(stmt))
	}
	t, ok := s[m[1]]
	if !ok {
		return fmt.Errorf("ALTER TABLE %s: no such table in the migrations before it", m[1])
	}
	change := m[2]
	if a := addIndexRE.FindStringSubmatch(change); a != nil {
		return t.addIndex(a[1])
	}
	if d := dropIndexRE.FindStringSubmatch(change); d != nil {
		if _, ok := t.Indexes[d[1]]; !ok {
			return fmt.Errorf("ALTER TABLE %s DROP INDEX %s: no such index", t.Name, d[1])
		}
		delete(t.Indexes, d[1])
		return nil
	}
	if st := alterSetRE.FindStringSubmatch(change); st != nil {
		return t.setAll(st[1])
	}
	return fmt.Errorf("ALTER TABLE %s %.60q not understood (ADD INDEX, DROP INDEX and SET are)", t.Name, change)
}

// setWith records the WITH (…) clause that follows a CREATE TABLE's
// column list (rest is the text after the list's closing parenthesis; the
// clause's own closing parenthesis may already be cut off).
func (t *Table) setWith(rest string) error {
	rest = strings.TrimSpace(Normalize(rest))
	if rest == "" {
		return nil
	}
	body, ok := strings.CutPrefix(rest, "WITH (")
	if !ok {
		body, ok = strings.CutPrefix(rest, "WITH(")
	}
	if !ok {
		return fmt.Errorf("table %s: %.40q after the columns is not WITH (…)", t.Name, rest)
	}
	return t.setAll(strings.TrimSuffix(strings.TrimSpace(body), ")"))
}

// setAll records "NAME = value, …".
func (t *Table) setAll(list string) error {
	for _, item := range splitTop(list) {
		k, v, ok := strings.Cut(item, "=")
		if !ok {
			return fmt.Errorf("table %s: setting %q not understood", t.Name, strings.TrimSpace(item))
		}
		t.Settings[strings.ToUpper(strings.TrimSpace(k))] = strings.TrimSpace(v)
	}
	return nil
}
