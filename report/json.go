package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"reflect"
	"sync"

	"github.com/iopath/iopath/bench"
)

// JSON writes r as indented JSON followed by a newline. The output is always
// valid JSON: a float that is NaN or infinite (encoding/json refuses those)
// is written as 0. r itself is not modified.
func JSON(w io.Writer, r *bench.Report) error { return writeJSON(w, r) }

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

// writeKindJSON writes v (a struct, or a pointer to one) as a JSON
// object that begins with "schema_version" and "kind", followed by v's
// own fields, indented, in one Write call. NaN and infinite floats are
// written as 0 (see sanitize).
func writeKindJSON(w io.Writer, kind string, version int, v any) error {
	var enc bytes.Buffer
	e := json.NewEncoder(&enc)
	e.SetEscapeHTML(false)
	if err := e.Encode(sanitize(reflect.ValueOf(v)).Interface()); err != nil {
		return err
	}
	body := bytes.TrimSpace(enc.Bytes())
	if len(body) < 2 || body[0] != '{' {
		return fmt.Errorf("report: %s: not a JSON object", kind)
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
