package jsondoc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/iopath/iopath/internal/units"
)

// Reading a document back is the mirror of Write: Open checks that a file
// holds one JSON object, Version its schema_version, Decode decodes it
// after renaming the keys an older version had (Renames). What tells one
// kind from another ("kind", or "tool" in older files) is the caller's to
// check, with Str and Errorf. Every error is one line that starts with
// the file's path and says what it should have been.

// maxBytes bounds what ReadFile reads. The largest documents iopath
// writes (net bench with --perf over a wide matrix) are tens of MiB.
var maxBytes int64 = 256 << 20

// ReadFile reads the document at path, at most MaxBytes of it, so that a
// path naming an endless stream (/dev/zero) is an error, not a process
// that fills memory (at most 256 MiB are read). A pipe (compare old.json <(...)) is read like a
// file. A file that cannot be read is an *fs.PathError; one that is too
// large, an error naming path.
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxBytes+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > maxBytes {
		return nil, fmt.Errorf("%s: larger than %s: not a document of iopath", path, units.FormatSize(maxBytes))
	}
	return data, nil
}

// Doc is a JSON document read back, not yet decoded.
type Doc struct {
	// Path names the document in errors.
	Path string
	// Name is what the document should be ("iopath report") and Want
	// which output that is ("want the output of iopath bench --format
	// json"): errors say both. A reader of one kind sets its own after
	// a reader of any kind has opened the document.
	Name, Want string

	keys map[string]json.RawMessage
	data []byte
}

// Open checks that data, read from path, is one JSON object.
func Open(path string, data []byte, name, want string) (*Doc, error) {
	d := &Doc{Path: path, Name: name, Want: want, data: data}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("%s: empty file, not an %s (%s)", path, name, want)
	}
	if err := json.Unmarshal(data, &d.keys); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("%s: not JSON (%v at byte %d)", path, se, se.Offset)
		}
		return nil, d.Errorf("JSON, but not an object")
	}
	return d, nil
}

// Str is the document's top-level key as a string: "" when it is absent
// or not a string.
func (d *Doc) Str(key string) string {
	var s string
	_ = json.Unmarshal(d.keys[key], &s) // not a string: ""
	return s
}

// Has reports whether the document has key with a value other than null.
func (d *Doc) Has(key string) bool {
	raw, ok := d.keys[key]
	return ok && string(raw) != "null"
}

// Errorf says the document is not a d.Name, why and what was wanted:
// "PATH: not an NAME (WHY; WANT)".
func (d *Doc) Errorf(format string, args ...any) error {
	return fmt.Errorf("%s: not an %s (%s; %s)", d.Path, d.Name, fmt.Sprintf(format, args...), d.Want)
}

// Version is the document's schema_version, a whole number from 1 to
// current: a newer one is an error whose fix is to upgrade iopath.
func (d *Doc) Version(current int) (int, error) {
	raw, ok := d.keys["schema_version"]
	if !ok {
		return 0, d.Errorf("no schema_version")
	}
	var v int
	if err := json.Unmarshal(raw, &v); err != nil || v < 1 {
		return 0, fmt.Errorf("%s: not an %s (schema_version %s is not a positive whole number)", d.Path, d.Name, units.OneLine(string(raw)))
	}
	if v > current {
		return 0, fmt.Errorf("%s: report schema_version %d is newer than this iopath reads (%d); upgrade iopath", d.Path, v, current)
	}
	return v, nil
}

// Decode decodes the document into v, its keys first renamed by r (nil:
// none).
func (d *Doc) Decode(v any, r Renames) error {
	data, err := r.rename(d.data)
	if err == nil {
		err = json.Unmarshal(data, v)
	}
	if err != nil {
		return fmt.Errorf("%s: not a valid %s: %s", d.Path, d.Name, units.OneLine(err.Error()))
	}
	return nil
}

// Renames maps the keys of an older schema_version to the current ones:
// for each place in the document ("" the top level, "machine" an object
// under it, "results[]" each element of an array), old key -> new key.
type Renames map[string]map[string]string

// rename returns data, a JSON object, with its keys renamed by r. Numbers
// keep their digits (an int64 of nanoseconds is not rounded to a float).
func (r Renames) rename(data []byte) ([]byte, error) {
	if r == nil {
		return data, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	r.walk(v, "")
	return json.Marshal(v)
}

func (r Renames) walk(v any, at string) {
	switch v := v.(type) {
	case map[string]any:
		for old, new := range r[at] {
			if x, ok := v[old]; ok {
				if _, clash := v[new]; !clash {
					v[new] = x
					delete(v, old)
				}
			}
		}
		for key, x := range v {
			next := key
			if at != "" {
				next = at + "." + key
			}
			r.walk(x, next)
		}
	case []any:
		for _, x := range v {
			r.walk(x, at+"[]")
		}
	}
}
