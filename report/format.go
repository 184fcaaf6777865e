package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/iopath/iopath/bench"
)

// renderer writes a report in one format.
type renderer func(io.Writer, *bench.Report) error

// formats are the output formats by name, in the order Formats lists
// them. HTML is not among them: it is a page written to a file, not to
// standard output.
var formats = []struct {
	name  string
	write renderer
}{
	{"table", Table},
	{"json", JSON},
	{"csv", CSV},
	{"markdown", Markdown},
	{"gobench", GoBench},
}

// Formats lists the names Write accepts, the default (table) first.
func Formats() []string {
	names := make([]string, len(formats))
	for i, f := range formats {
		names[i] = f.name
	}
	return names
}

// Write writes r to w in the named format (one of Formats). An unknown
// name is an error that lists the valid ones, and writes nothing.
func Write(w io.Writer, format string, r *bench.Report) error {
	if r.Tree != nil {
		// A many-files report has its own table; the other text formats
		// are for one file's engines.
		switch format {
		case "table":
			return TreeTable(w, r)
		case "json":
			return JSON(w, r)
		}
		return fmt.Errorf("format %q is not available for a tree (bench --tree): use table or json", format)
	}
	for _, f := range formats {
		if f.name == format {
			return f.write(w, r)
		}
	}
	return fmt.Errorf("unknown format %q: valid formats are %s", format, strings.Join(Formats(), ", "))
}

// KindFormats are the formats of every command whose result is not a
// benchmark's (features, advise, net load), the default first.
var KindFormats = []string{"table", "json", "csv", "markdown"}
