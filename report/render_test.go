package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/iopath/iopath/features"
)

// sampleDoc has every part a Doc can have: a title, header fields (one
// continued), a figure with runs and one without, a text column, a wide
// column, two titled groups, a sub-row, a failed row, a legend, notes and
// a closing paragraph.
func sampleDoc() *Doc {
	return &Doc{
		Kind:   "sample",
		Title:  "a sample",
		Header: []Field{{"machine", "AMD EPYC, 2 CPUs"}, {"", "(a second line)"}, {"file", "/tmp/x"}},
		Columns: []Column{
			{Key: "engine", Title: "engine", Left: true},
			{Key: "qps", Title: "QPS", Unit: "1/s", Better: Higher, Spread: true},
			{Key: "p99_us", Title: "P99 µs", Unit: "µs", Better: Lower, Prec: 1},
			{Key: "threads", Title: "threads", Wide: true},
		},
		Groups: []Group{
			{Title: "4 KiB", Rows: []Row{
				{Cells: []Cell{TextCell("epoll"), Runs([]float64{100, 120, 90}), Figure(51.25), Figure(1)}},
				{Sub: true, Cells: []Cell{TextCell("fio"), Runs([]float64{80}), Figure(60), Figure(2)}},
				{Cells: []Cell{TextCell("io_uring")}, Err: "failed: EPERM"},
			}},
			{Title: "64 KiB", Rows: []Row{
				{Cells: []Cell{TextCell("net"), Runs(nil), Figure(math.Inf(1)), Figure(3)}},
			}},
		},
		Legend: []Field{{"QPS", "requests per second"}, {"P99 µs", "latency"}},
		Notes:  []string{"a note that is long enough to wrap at the hundredth column of a terminal, so that it is read without a scroll bar, as the issue asks"},
		After:  []string{"In Go:\n\n\tx := 1\n"},
	}
}

func TestDocFormats(t *testing.T) {
	d := sampleDoc()
	for _, c := range []struct {
		format string
		wide   bool
		file   string
	}{
		{"table", false, "doc_table.golden"},
		{"table", true, "doc_table_wide.golden"},
		{"csv", false, "doc.golden.csv"},
		{"markdown", false, "doc.golden.md"},
	} {
		var b bytes.Buffer
		if err := WriteDoc(&b, c.format, d, DocOptions{Wide: c.wide}); err != nil {
			t.Fatal(err)
		}
		golden(t, c.file, b.Bytes())
		if c.format == "table" {
			for _, line := range strings.Split(b.String(), "\n") {
				if width(line) > docWrap {
					t.Errorf("%s: line wider than %d columns: %q", c.file, docWrap, line)
				}
				if strings.HasSuffix(line, " ") {
					t.Errorf("%s: trailing space: %q", c.file, line)
				}
			}
			if strings.Contains(b.String(), "threads") != c.wide {
				t.Errorf("%s: the wide column is shown %v, want %v", c.file, !c.wide, c.wide)
			}
		}
	}
	var b bytes.Buffer
	if err := WriteDoc(&b, "xml", d, DocOptions{}); err == nil || b.Len() != 0 {
		t.Errorf("format xml: err %v, %d bytes written", err, b.Len())
	}
}

// TestDocCSV: every row is a record of the same length, a figure at full
// precision with its min and max, nothing for a figure that is not finite.
func TestDocCSV(t *testing.T) {
	var b bytes.Buffer
	if err := WriteDoc(&b, "csv", sampleDoc(), DocOptions{}); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"group", "engine", "qps", "qps_min", "qps_max", "p99_us", "threads", "error"}
	if strings.Join(recs[0], ",") != strings.Join(want, ",") {
		t.Errorf("header %v, want %v", recs[0], want)
	}
	if len(recs) != 5 {
		t.Fatalf("%d records, want a header and 4 rows", len(recs))
	}
	if r := recs[1]; r[2] != "100" || r[3] != "90" || r[4] != "120" || r[5] != "51.25" {
		t.Errorf("first row %v: want qps 100 (90–120), p99 51.25", r)
	}
	if r := recs[4]; r[2] != "" || r[5] != "" {
		t.Errorf("row without figures %v: want empty cells", r)
	}
}

func TestFeaturesFormats(t *testing.T) {
	r := &features.Report{
		IOURing:    features.IOURing{Errno: "EPERM", Syscall: "io_uring_setup", Reason: "io_uring_setup is refused by a seccomp filter"},
		Ops:        []string{"NOP", "READ"},
		SetupFlags: []features.Flag{{Name: "SQPOLL", Supported: true}, {Name: "IOPOLL", Note: "not on virtio"}},
		Kernel:     "6.18.0", PageSize: 4096, THP: "madvise", MemlockBytes: -1,
	}
	for _, f := range KindFormats {
		var b bytes.Buffer
		if err := WriteFeatures(&b, f, r); err != nil {
			t.Fatal(err)
		}
		golden(t, "features."+f+".golden", b.Bytes())
	}
	var b bytes.Buffer
	if err := WriteFeatures(&b, "json", r); err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(b.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	if v["schema_version"] != float64(FeaturesSchemaVersion) || v["kind"] != "features" || v["kernel"] != "6.18.0" {
		t.Errorf("json %v: want schema_version, kind and the report's own keys", v)
	}
}
