package report

import (
	"bytes"
	"encoding/json"
	"io"

	"github.com/iopath/iopath/bench"
	"github.com/iopath/iopath/features"
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

// Schema versions of the kinds whose results are not read back.
const (
	// FileServeSchemaVersion is the schema_version of `iopath net bench
	// --serve-file --format json` (docs/schema/file-serve.schema.json).
	FileServeSchemaVersion = 1
	// WritevSchemaVersion is the schema_version of `iopath net bench
	// --writev --format json` (docs/schema/writev.schema.json).
	WritevSchemaVersion = 1
)

// SideRun says what ran a side benchmark (--serve-file, --writev): the
// command line and the machine, written before the results.
type SideRun struct {
	Command string           `json:"command"`
	Machine features.Machine `json:"machine"`
}

// FileServeJSON writes the results of `net bench --serve-file` (one per
// method and file size, medians over the runs) as the kind "file-serve".
func FileServeJSON(w io.Writer, run SideRun, rs []netresult.FileServe) error {
	return jsondoc.Write(w, "file-serve", FileServeSchemaVersion, struct {
		SideRun
		Results []netresult.FileServe `json:"results"`
	}{run, rs})
}

// WritevJSON writes the results of `net bench --writev` (one per way and
// part count, medians over the runs) as the kind "writev".
func WritevJSON(w io.Writer, run SideRun, rs []netresult.Writev) error {
	return jsondoc.Write(w, "writev", WritevSchemaVersion, struct {
		SideRun
		Results []netresult.Writev `json:"results"`
	}{run, rs})
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
