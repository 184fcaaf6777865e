package report

import (
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/iopath/iopath/bench"
	"github.com/iopath/iopath/internal/jsondoc"
	"github.com/iopath/iopath/netio/netresult"
)

// JSON writes r as indented JSON followed by a newline, of kind "file",
// "tree" or "append" (r.Kind()) at bench.SchemaVersion
// (docs/schema/file.schema.json, tree.schema.json, append.schema.json). The output is always valid JSON: a float that is
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

// LoadJSON reads a report written by `iopath bench --format json` (the
// kinds "file", "tree" and "append"), of this schema_version or an older one, whose
// keys it renames (benchRenames) and whose figures bench.Upgrade brings up
// to date. Its errors are one line and name path: the file is missing or
// unreadable, is not JSON, is JSON but not an iopath report, or has a
// schema_version newer than this iopath knows (then the fix is to upgrade
// iopath).
func LoadJSON(path string) (*bench.Report, error) {
	data, err := readReport(path)
	if err != nil {
		return nil, err
	}
	d, err := jsondoc.Open(path, data, benchName, benchWant)
	if err != nil {
		return nil, err
	}
	return decodeBench(d)
}

// readReport reads path; its error is "PATH: what is wrong", one line.
func readReport(path string) ([]byte, error) {
	data, err := jsondoc.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("%s: %w", path, pe.Err)
		}
		return nil, err // names path already
	}
	return data, nil
}

const (
	benchName = "iopath report"
	benchWant = "want the output of iopath bench --format json"
)

// decodeBench decodes d as a report of iopath bench (see LoadJSON).
func decodeBench(d *jsondoc.Doc) (*bench.Report, error) {
	d.Name, d.Want = benchName, benchWant
	if d.Str("tool") != bench.ToolIopath {
		return nil, d.Errorf("its \"tool\" is not %q", bench.ToolIopath)
	}
	version, err := d.Version(bench.SchemaVersion)
	if err != nil {
		return nil, err
	}
	var renames jsondoc.Renames
	if version < 3 {
		// Versions 1 and 2 had no kind, and keys without their units.
		renames = benchRenames
	} else if k := d.Str("kind"); k != bench.KindFile && k != bench.KindTree && k != bench.KindAppend {
		return nil, d.Errorf("its \"kind\" is not %q, %q or %q", bench.KindFile, bench.KindTree, bench.KindAppend)
	}
	var r bench.Report
	if err := d.Decode(&r, renames); err != nil {
		return nil, err
	}
	r.SchemaVersion = version
	if err := bench.Upgrade(&r); err != nil {
		return nil, fmt.Errorf("%s: %w", d.Path, err)
	}
	return &r, nil
}

// benchRenames brings a bench report of schema_version 1 or 2 to 3.
var benchRenames = jsondoc.Renames{
	"machine": {"page_size": "page_size_bytes"},
	"sweep":   {"block_sizes": "block_sizes_bytes"},
	"results[]": {"bs": "bs_bytes", "syscalls": "syscalls_per_pass", "minflt": "minflt_per_pass",
		"majflt": "majflt_per_pass", "nvcsw": "nvcsw_per_pass", "nivcsw": "nivcsw_per_pass",
		"files": "files_per_pass", "file_errors": "file_errors_per_pass"},
	"results[].runs[]": {"resident_before": "resident_before_frac", "resident_after": "resident_after_frac"},
}

// netRenames brings a net bench report of schema_version 1 to 2.
var netRenames = jsondoc.Renames{
	"machine": {"page_size": "page_size_bytes"},
}
