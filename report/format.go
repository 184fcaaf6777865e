package report

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/iopath/iopath/bench"
)

// formats are the output formats of a benchmark report, the default
// first. HTML is not among them: it is a page written to a file, not to
// standard output.
var formats = []string{"table", "json", "csv", "markdown", "gobench"}

// Formats lists the names Write accepts, the default (table) first.
func Formats() []string { return slices.Clone(formats) }

// Write writes r, a single file's report or a tree's, to w in the named
// format (one of Formats): JSON as the report is, every other format
// from BenchDoc(r) through WriteDoc, with o choosing what a table shows.
// An unknown name is an error that lists the valid ones, and writes
// nothing.
func Write(w io.Writer, format string, r *bench.Report, o DocOptions) error {
	switch {
	case format == "json":
		return JSON(w, r)
	case !slices.Contains(formats, format):
		return fmt.Errorf("unknown format %q: valid formats are %s", format, strings.Join(formats, ", "))
	}
	return WriteDoc(w, format, BenchDoc(r), o)
}

// KindFormats are the formats of every command whose result is not a
// benchmark's (features, advise, net load), the default first.
var KindFormats = []string{"table", "json", "csv", "markdown"}
