package sqlite

import (
	"bytes"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"time"
)

// assign stores src, a value the driver gave (int64, float64, bool,
// []byte, string, time.Time or nil), in dest, as database/sql's Scan
// would (TestScanConvertsAsDatabaseSQL holds it to that): a sql.Scanner
// scans it itself; *string, *[]byte and *bool take any kind, as text or
// as driver.Bool reads it; numbers parse from text; bytes are copied (the
// driver may reuse them); NULL goes only into a pointer, a []byte, an any
// or a Scanner. The common pairs come first, without reflection.
func assign(dest, src any) error {
	switch d := dest.(type) {
	case *string:
		if s, ok := asText(src); ok {
			*d = s
			return nil
		}
	case *int64:
		if s, ok := src.(int64); ok {
			*d = s
			return nil
		}
	case *int:
		if s, ok := src.(int64); ok && int64(int(s)) == s {
			*d = int(s)
			return nil
		}
	case *[]byte:
		if b, ok := bytesOf(src); ok {
			*d = b
			return nil
		}
	case *sql.RawBytes:
		if src == nil {
			*d = nil
			return nil
		}
		if b, ok := bytesOf(src); ok {
			*d = append((*d)[:0], b...)
			return nil
		}
	case *bool:
		b, err := driver.Bool.ConvertValue(src)
		if err != nil {
			return err
		}
		*d = b.(bool)
		return nil
	case *any:
		if s, ok := src.([]byte); ok {
			*d = bytes.Clone(s)
			return nil
		}
		*d = src
		return nil
	case *time.Time:
		if s, ok := src.(time.Time); ok {
			*d = s
			return nil
		}
	case sql.Scanner:
		return d.Scan(src)
	case nil:
		return errors.New("destination is nil")
	}
	return assignReflect(dest, src)
}

// assignReflect is assign for the rarer pairs: named types, pointers to
// pointers (NULL as nil), numbers of other widths, text to numbers.
func assignReflect(dest, src any) error {
	dv := reflect.ValueOf(dest)
	if dv.Kind() != reflect.Pointer || dv.IsNil() {
		return fmt.Errorf("destination not a pointer: %T", dest)
	}
	v := dv.Elem()
	if v.Kind() == reflect.Pointer {
		if src == nil {
			v.SetZero()
			return nil
		}
		p := reflect.New(v.Type().Elem())
		if err := assign(p.Interface(), src); err != nil {
			return err
		}
		v.Set(p)
		return nil
	}
	if src == nil {
		return fmt.Errorf("converting NULL to %s is unsupported", v.Kind())
	}
	sv := reflect.ValueOf(src)
	if sv.Type().AssignableTo(v.Type()) {
		if b, ok := src.([]byte); ok {
			v.Set(reflect.ValueOf(bytes.Clone(b)))
			return nil
		}
		v.Set(sv)
		return nil
	}
	if v.Kind() == sv.Kind() && sv.Type().ConvertibleTo(v.Type()) {
		v.Set(sv.Convert(v.Type()))
		return nil
	}
	text, ok := asText(src)
	switch v.Kind() {
	case reflect.String:
		switch s := src.(type) {
		case string:
			v.SetString(s)
			return nil
		case []byte:
			v.SetString(string(s))
			return nil
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		if !ok {
			break
		}
		if err := setNumber(v, text); err != nil {
			return fmt.Errorf("converting driver.Value type %T (%q) to a %s: %w", src, text, v.Kind(), err)
		}
		return nil
	}
	return fmt.Errorf("unsupported Scan, storing driver.Value type %T into type %T", src, dest)
}

// bytesOf is src as bytes of its own, nil for NULL; false for a kind
// without text.
func bytesOf(src any) ([]byte, bool) {
	switch s := src.(type) {
	case []byte:
		return bytes.Clone(s), true
	case nil:
		return nil, true
	}
	s, ok := asText(src)
	return []byte(s), ok
}

// setNumber parses text into v, a number of any kind and size.
func setNumber(v reflect.Value, text string) error {
	bits := v.Type().Bits()
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(text, 10, bits)
		if err == nil {
			v.SetInt(n)
		}
		return err
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, err := strconv.ParseUint(text, 10, bits)
		if err == nil {
			v.SetUint(n)
		}
		return err
	}
	f, err := strconv.ParseFloat(text, bits)
	if err == nil {
		v.SetFloat(f)
	}
	return err
}

// asText is src as database/sql formats it to convert between kinds.
func asText(src any) (string, bool) {
	switch s := src.(type) {
	case string:
		return s, true
	case []byte:
		return string(s), true
	case int64:
		return strconv.FormatInt(s, 10), true
	case float64:
		return strconv.FormatFloat(s, 'g', -1, 64), true
	case bool:
		return strconv.FormatBool(s), true
	case time.Time:
		return s.Format(time.RFC3339Nano), true
	}
	return "", false
}

// driverValue converts a statement argument as database/sql does for a
// driver without its own checker (modernc's has none): the common kinds
// as they are, the rest by driver.DefaultParameterConverter (Valuers,
// named and sized numbers, pointers).
func driverValue(v any) (driver.Value, error) {
	switch x := v.(type) {
	case nil, int64, string, []byte, float64, bool, time.Time:
		return x, nil
	case int:
		return int64(x), nil
	}
	return driver.DefaultParameterConverter.ConvertValue(v)
}
