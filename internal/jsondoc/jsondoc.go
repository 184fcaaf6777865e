// Package jsondoc writes iopath's JSON documents: one object per result,
// whose first keys are "schema_version" and "kind" (docs/reports.md, "JSON";
// the schemas are in docs/schema), so that every command's JSON is of one
// family. It is the one JSON writer of report and advise, which cannot
// import each other's writers, and the one reader of such a document
// back (read.go): the envelope and older versions' keys, while which kind
// a file is stays its caller's.
package jsondoc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"reflect"
	"sync"
)

// Write writes v (a struct, or a pointer to one) as a JSON object that
// begins with "schema_version" and "kind", followed by v's own fields,
// indented, and a newline, in one Write call. NaN and infinite floats
// (encoding/json refuses those) are written as 0, so the output is always
// valid JSON; v itself is not modified.
func Write(w io.Writer, kind string, version int, v any) error {
	var enc bytes.Buffer
	e := json.NewEncoder(&enc)
	e.SetEscapeHTML(false)
	if err := e.Encode(sanitize(reflect.ValueOf(v)).Interface()); err != nil {
		return err
	}
	body := bytes.TrimSpace(enc.Bytes())
	if len(body) < 2 || body[0] != '{' {
		return fmt.Errorf("jsondoc: %s: not a JSON object", kind)
	}
	// A type that carried its own "schema_version" or "kind" would
	// write the key twice, and a reader would take either: refuse it.
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(body, &keys); err != nil {
		return fmt.Errorf("jsondoc: %s: %w", kind, err)
	}
	for _, k := range []string{"schema_version", "kind"} {
		if _, ok := keys[k]; ok {
			return fmt.Errorf("jsondoc: %s: the value has its own %q key", kind, k)
		}
	}
	var raw bytes.Buffer
	fmt.Fprintf(&raw, `{"schema_version":%d,"kind":%q`, version, kind)
	if rest := body[1:]; rest[0] != '}' {
		raw.WriteByte(',')
		raw.Write(rest)
	} else {
		raw.WriteByte('}')
	}
	var out bytes.Buffer
	if err := json.Indent(&out, raw.Bytes(), "", "  "); err != nil {
		return err
	}
	out.WriteByte('\n')
	_, err := w.Write(out.Bytes())
	return err
}

// sanitize returns a deep copy of v in which every NaN or infinite float
// reachable through exported fields, slices, arrays, maps and pointers is
// 0. Parts whose type holds no float are shared, not copied.
func sanitize(v reflect.Value) reflect.Value {
	if !holdsFloat(v.Type()) {
		return v
	}
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		out := reflect.New(v.Type()).Elem()
		if f := v.Float(); !math.IsNaN(f) && !math.IsInf(f, 0) {
			out.SetFloat(f)
		}
		return out
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		out := reflect.New(v.Type().Elem())
		out.Elem().Set(sanitize(v.Elem()))
		return out
	case reflect.Interface:
		if v.IsNil() {
			return v
		}
		out := reflect.New(v.Type()).Elem()
		out.Set(sanitize(v.Elem()))
		return out
	case reflect.Struct:
		out := reflect.New(v.Type()).Elem()
		out.Set(v)
		for i := range v.NumField() {
			if f := out.Field(i); f.CanSet() {
				f.Set(sanitize(v.Field(i)))
			}
		}
		return out
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		out := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			out.Index(i).Set(sanitize(v.Index(i)))
		}
		return out
	case reflect.Array:
		out := reflect.New(v.Type()).Elem()
		for i := range v.Len() {
			out.Index(i).Set(sanitize(v.Index(i)))
		}
		return out
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		out := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			out.SetMapIndex(it.Key(), sanitize(it.Value()))
		}
		return out
	}
	return v
}

var floatTypes sync.Map // reflect.Type -> bool

// holdsFloat reports whether a value of type t can hold a float that
// sanitize must check; the answer is cached per type.
func holdsFloat(t reflect.Type) bool {
	if v, ok := floatTypes.Load(t); ok {
		return v.(bool)
	}
	has := hasFloat(t, map[reflect.Type]bool{})
	floatTypes.Store(t, has)
	return has
}

// hasFloat reports whether a value of type t can hold a float that
// sanitize must check.
func hasFloat(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return false
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Float32, reflect.Float64, reflect.Interface:
		return true
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		return hasFloat(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && hasFloat(f.Type, seen) {
				return true
			}
		}
	}
	return false
}
