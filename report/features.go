package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/jsondoc"
	"github.com/iopath/iopath/internal/units"
)

// FeaturesSchemaVersion is the schema_version of `iopath features
// --format json` (docs/schema/features.schema.json).
//
// Version 2: page_size is page_size_bytes.
const FeaturesSchemaVersion = 2

// UsedOps are the io_uring opcodes iopath's engines use: files, then
// sockets.
var UsedOps = []string{"READ", "READ_FIXED", "READV", "OPENAT", "STATX", "CLOSE", "NOP",
	"ACCEPT", "RECV", "SEND", "SENDMSG", "SPLICE", "SHUTDOWN", "ASYNC_CANCEL"}

// FeaturesDoc maps a probe's report into a Doc: whether io_uring is
// usable (and why not) in the header, then the setup flags and the ops
// iopath uses, one row each, then the kernel and the limits.
func FeaturesDoc(r *features.Report) *Doc {
	d := &Doc{Kind: "features"}
	u := r.IOURing
	if u.Available {
		d.Header = append(d.Header, Field{"io_uring", "available"})
	} else {
		why := u.Reason
		if u.Errno != "" {
			why = u.Errno + ": " + why
		}
		d.Header = append(d.Header, Field{"io_uring", "not available: " + why})
		if len(r.SetupFlags) > 0 || len(r.Ops) > 0 {
			d.Header = append(d.Header, Field{"", "(the flags and ops below are what the kernel offers; iopath will not use them)"})
		}
	}
	thp := r.THP
	if thp == "" {
		thp = "unknown"
	}
	ml := "unlimited"
	if r.MemlockBytes >= 0 {
		ml = units.FormatSize(r.MemlockBytes)
	}
	d.Header = append(d.Header,
		Field{"kernel", r.Kernel},
		Field{"page size", fmt.Sprint(r.PageSize)},
		Field{"transparent hugepages", thp},
		Field{"memlock limit", ml})
	if p := r.BufferPlacement; p != nil {
		d.Header = append(d.Header, Field{"buffer placement", p.String()})
	}
	if c := r.MappedCopy; c != nil {
		d.Header = append(d.Header, Field{"mapped copy", c.String()})
	}
	if r.MachineProfile != "" {
		d.Header = append(d.Header, Field{"machine profile", r.MachineProfile})
	}
	if r.Perf != "" {
		d.Header = append(d.Header, Field{"perf (--perf)", r.Perf})
	}
	if r.Loss != "" {
		d.Header = append(d.Header, Field{"packet loss (--loss)", r.Loss})
	}
	d.Columns = []Column{
		{Key: "name", Title: "feature", Left: true},
		{Key: "supported", Title: "supported", Left: true},
		{Key: "note", Title: "note", Left: true},
	}
	if len(r.SetupFlags) > 0 {
		g := Group{Title: "setup flags"}
		for _, f := range r.SetupFlags {
			g.Rows = append(g.Rows, Row{Cells: []Cell{TextCell(f.Name), TextCell(yesNo(f.Supported)), TextCell(f.Note)}})
		}
		d.Groups = append(d.Groups, g)
	}
	if len(r.Ops) > 0 {
		g := Group{Title: "ops iopath uses"}
		for _, op := range UsedOps {
			g.Rows = append(g.Rows, Row{Cells: []Cell{TextCell(op), TextCell(yesNo(r.HasOp(op))), {}}})
		}
		d.Groups = append(d.Groups, g)
		d.Notes = append(d.Notes, fmt.Sprintf("all ops the kernel offers (%d): %s", len(r.Ops), strings.Join(r.Ops, " ")))
	}
	return d
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// WriteFeatures writes r in one of KindFormats.
func WriteFeatures(w io.Writer, format string, r *features.Report) error {
	if format == "json" {
		return jsondoc.Write(w, "features", FeaturesSchemaVersion, r)
	}
	return WriteDoc(w, format, FeaturesDoc(r), DocOptions{})
}
