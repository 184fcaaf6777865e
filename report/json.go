package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/iopath/iopath/bench"
	"github.com/iopath/iopath/internal/jsondoc"
	"github.com/iopath/iopath/netio/netresult"
)

// JSON writes r as indented JSON followed by a newline, of kind "file" or
// "tree" (r.Kind()) at bench.SchemaVersion (docs/schema/file.schema.json,
// tree.schema.json). The output is always valid JSON: a float that is
// NaN or infinite (encoding/json refuses those) is written as 0. r itself
// is not modified.
func JSON(w io.Writer, r *bench.Report) error {
	return jsondoc.Write(w, r.Kind(), bench.SchemaVersion, r)
}

// FileServeJSON writes the report of `net bench --serve-file` (one
// result per method and file size, the medians over the runs with each
// run's figures) as the kind "file-serve" at
// netresult.FileServeSchemaVersion (docs/schema/file-serve.schema.json).
func FileServeJSON(w io.Writer, r *netresult.FileServeReport) error {
	return jsondoc.Write(w, netresult.FileServeKind, netresult.FileServeSchemaVersion, r)
}

// WritevJSON writes the report of `net bench --writev` (one result per
// way and part count, the medians over the runs with each run's figures)
// as the kind "writev" at netresult.WritevSchemaVersion
// (docs/schema/writev.schema.json).
func WritevJSON(w io.Writer, r *netresult.WritevReport) error {
	return jsondoc.Write(w, netresult.WritevKind, netresult.WritevSchemaVersion, r)
}

// decodeSide decodes data, read from path, as a report of kind (the JSON
// of `net bench --serve-file` or `--writev`, compare's loaders) into v,
// and returns its schema_version. Version 1 (no per-run figures, no start time or
// config) decodes into the current types as it is; a newer version than
// current, another kind or a report that is not an object is an error
// naming path.
func decodeSide(path string, data []byte, kind string, current int, v any) (int, error) {
	want := "want the output of iopath net bench --serve-file --format json"
	if kind == netresult.WritevKind {
		want = "want the output of iopath net bench --writev --format json"
	}
	var probe struct {
		Kind          string          `json:"kind"`
		SchemaVersion json.RawMessage `json:"schema_version"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return 0, fmt.Errorf("%s: not an iopath report (%s)", path, want)
	}
	if probe.Kind != kind {
		return 0, fmt.Errorf("%s: not an iopath %s report (its \"kind\" is %q; %s)", path, kind, probe.Kind, want)
	}
	var version int
	if err := json.Unmarshal(probe.SchemaVersion, &version); err != nil || version < 1 {
		return 0, fmt.Errorf("%s: not an iopath report (schema_version %s is not a positive whole number)", path, oneLine(string(probe.SchemaVersion)))
	}
	if version > current {
		return 0, fmt.Errorf("%s: report schema_version %d is newer than this iopath reads (%d); upgrade iopath", path, version, current)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return 0, fmt.Errorf("%s: not a valid iopath %s report: %v", path, kind, oneLine(err.Error()))
	}
	return version, nil
}

// keyRenames maps the keys of an older schema_version to the current ones:
// for each place in the document ("" the top level, "machine" an object
// under it, "results[]" each element of an array), old key -> new key.
type keyRenames map[string]map[string]string

// benchRenames brings a bench report of schema_version 1 or 2 to 3.
var benchRenames = keyRenames{
	"machine": {"page_size": "page_size_bytes"},
	"sweep":   {"block_sizes": "block_sizes_bytes"},
	"results[]": {"bs": "bs_bytes", "syscalls": "syscalls_per_pass", "minflt": "minflt_per_pass",
		"majflt": "majflt_per_pass", "nvcsw": "nvcsw_per_pass", "nivcsw": "nivcsw_per_pass",
		"files": "files_per_pass", "file_errors": "file_errors_per_pass"},
	"results[].runs[]": {"resident_before": "resident_before_frac", "resident_after": "resident_after_frac"},
}

// netRenames brings a net bench report of schema_version 1 to 2.
var netRenames = keyRenames{
	"machine": {"page_size": "page_size_bytes"},
}

// rename returns data, a JSON object, with its keys renamed by k. Numbers
// keep their digits (an int64 of nanoseconds is not rounded to a float).
func (k keyRenames) rename(data []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	k.walk(v, "")
	return json.Marshal(v)
}

func (k keyRenames) walk(v any, at string) {
	switch v := v.(type) {
	case map[string]any:
		for old, new := range k[at] {
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
			k.walk(x, next)
		}
	case []any:
		for _, x := range v {
			k.walk(x, at+"[]")
		}
	}
}
