package jsondoc

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRenames: keys are renamed at their place in the document only,
// numbers keep their digits, and a key whose new name is already there
// is left alone.
func TestRenames(t *testing.T) {
	r := Renames{"": {"a": "a_ns"}, "x[]": {"a": "a_bytes"}, "x[].y": {"b": "b_pct"}}
	in := `{"a": 9007199254740993, "b": 1, "x": [{"a": 2, "y": {"b": 3, "a": 4}}, {"a": 5, "a_bytes": 6}], "z": {"a": 7}}`
	out, err := r.rename([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"a_ns":9007199254740993,"b":1,"x":[{"a_bytes":2,"y":{"a":4,"b_pct":3}},{"a":5,"a_bytes":6}],"z":{"a":7}}`
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
	if _, err := r.rename([]byte(`{"a": `)); err == nil || !strings.Contains(err.Error(), "EOF") {
		t.Errorf("truncated JSON: %v", err)
	}
}

// TestRead: a document of an older version decodes with its keys renamed;
// every way a document can be wrong is one line that starts with its path
// and says what was wanted.
func TestRead(t *testing.T) {
	const name, want = "x report", "want the output of x"
	d, err := Open("a.json", []byte(`{"schema_version": 1, "tool": "x", "t": null, "old": 7}`), name, want)
	if err != nil {
		t.Fatal(err)
	}
	if d.Str("tool") != "x" || d.Str("old") != "" || d.Str("none") != "" || d.Has("t") || !d.Has("old") {
		t.Errorf("Str/Has: tool %q, old %q, has t %v, has old %v", d.Str("tool"), d.Str("old"), d.Has("t"), d.Has("old"))
	}
	if v, err := d.Version(2); v != 1 || err != nil {
		t.Errorf("Version = %d, %v", v, err)
	}
	var got struct {
		New int `json:"new"`
	}
	if err := d.Decode(&got, Renames{"": {"old": "new"}}); err != nil || got.New != 7 {
		t.Errorf("Decode: %+v, %v", got, err)
	}

	for _, tc := range []struct{ data, want string }{
		{" \n", "a.json: empty file, not an x report (want the output of x)"},
		{"hello", "a.json: not JSON (invalid character 'h' looking for beginning of value at byte 1)"},
		{"[1]", "a.json: not an x report (JSON, but not an object; want the output of x)"},
		{`{}`, "a.json: not an x report (no schema_version; want the output of x)"},
		{`{"schema_version": "1\n"}`, `a.json: not an x report (schema_version "1\n" is not a positive whole number)`},
		{`{"schema_version": 0}`, "a.json: not an x report (schema_version 0 is not a positive whole number)"},
		{`{"schema_version": 3}`, "a.json: report schema_version 3 is newer than this iopath reads (2); upgrade iopath"},
		{`{"schema_version": 2, "new": "7"}`, "a.json: not a valid x report: "},
	} {
		d, err := Open("a.json", []byte(tc.data), name, want)
		if err == nil {
			_, err = d.Version(2)
		}
		if err == nil {
			err = d.Decode(&got, nil)
		}
		// The decoder's own words after "not a valid" are its to choose.
		if err == nil || err.Error() != tc.want && !(strings.HasSuffix(tc.want, ": ") && strings.HasPrefix(err.Error(), tc.want)) {
			t.Errorf("%q: %v\nwant %s", tc.data, err, tc.want)
		}
	}
}

// TestReadFile: a document is read whole; an endless or oversized file
// is an error naming it, read no further than the bound; a missing one
// an *fs.PathError.
func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small.json")
	if err := os.WriteFile(small, []byte(`{"a": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFile(small); err != nil || string(b) != `{"a": 1}` {
		t.Fatalf("ReadFile(small) = %q, %v", b, err)
	}
	defer func(m int64) { maxBytes = m }(maxBytes)
	maxBytes = 1 << 10
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, make([]byte, maxBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(big); err == nil || !strings.HasPrefix(err.Error(), big+": larger than 1KiB") {
		t.Errorf("ReadFile(big) = %v", err)
	}
	if _, err := ReadFile("/dev/zero"); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("ReadFile(/dev/zero) = %v", err)
	}
	var pe *fs.PathError
	if _, err := ReadFile(filepath.Join(dir, "missing")); !errors.As(err, &pe) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile(missing) = %v", err)
	}
}
