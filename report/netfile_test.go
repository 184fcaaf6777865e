package report

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/netio/netresult"
)

// fileServeFixture is what netresult.FileServeMedians returns for two
// sizes, three runs each: every method at 4 KiB (io_uring failed), every
// method at 1 MiB, given out of order to check the sorting.
func fileServeFixture() []netresult.FileServe {
	row := func(m string, size int64, gbps, cpu, spmb, spr float64) netresult.FileServe {
		return netresult.FileServe{Method: m, FileSize: size, Conns: 1, Chunk: 128 << 10, Depth: 4, Runs: 3,
			Responses: 3000, Bytes: 3000 * size, Elapsed: 3 * time.Second, GBps: gbps, GBpsMin: gbps * 0.9, GBpsMax: gbps * 1.1,
			CPUSecPerGB: cpu, CPUSecPerGBMin: cpu * 0.95, CPUSecPerGBMax: cpu * 1.2, SyscallsPerMB: spmb, SyscallsPerResp: spr,
			ProcCPUSecPerGB: cpu * 1.1, Verified: true,
			PerRun: []netresult.FileServeRun{
				{Responses: 1000, Bytes: 1000 * size, Elapsed: time.Second, GBps: gbps * 0.9, CPUSecPerGB: cpu * 1.2,
					ProcCPUSecPerGB: cpu * 1.2, SyscallsPerMB: spmb, SyscallsPerResp: spr},
				{Responses: 1000, Bytes: 1000 * size, Elapsed: time.Second, GBps: gbps, CPUSecPerGB: cpu,
					ProcCPUSecPerGB: cpu * 1.1, SyscallsPerMB: spmb, SyscallsPerResp: spr},
				{Responses: 1000, Bytes: 1000 * size, Elapsed: time.Second, GBps: gbps * 1.1, CPUSecPerGB: cpu * 0.95,
					ProcCPUSecPerGB: cpu, SyscallsPerMB: spmb, SyscallsPerResp: spr},
			}}
	}
	ur := row(netresult.IOURing, 1<<20, 2.4, 0.3, 1.91, 2)
	ur.IOThreadCPU = 5 * time.Millisecond
	return []netresult.FileServe{
		row(netresult.Sendfile, 1<<20, 3.1, 0.12, 2.86, 3),
		row(netresult.ReadWrite, 4096, 0.21, 3.5, 732, 3),
		row(netresult.Sendfile, 4096, 0.25, 2.9, 732, 3),
		row(netresult.Splice, 4096, 0.24, 3.1, 977, 4),
		{Method: netresult.IOURing, FileSize: 4096, Conns: 1, Chunk: 128 << 10, Depth: 4, Runs: 3,
			Err: "filesrv: io_uring: not supported: <io_uring is not available>"},
		row(netresult.ReadWrite, 1<<20, 2.2, 0.4, 16.2, 17),
		row(netresult.Splice, 1<<20, 2.5, 0.2, 17.2, 18),
		ur,
	}
}

func writevFixture() []netresult.Writev {
	row := func(way string, k, bytes int, sys, cpu, wall float64) netresult.Writev {
		return netresult.Writev{Way: way, K: k, RespBytes: bytes, Runs: 3, Responses: 60000, Calls: 60000,
			SyscallsPerResp: sys, CPUNsPerResp: cpu, CPUNsPerRespMin: cpu * 0.9, CPUNsPerRespMax: cpu * 1.3,
			NsPerResp: wall, Verified: true,
			PerRun: []netresult.WritevRun{
				{Responses: 20000, Elapsed: time.Duration(20000 * wall), NsPerResp: wall, SyscallsPerResp: sys, CPUNsPerResp: cpu * 1.3},
				{Responses: 20000, Elapsed: time.Duration(20000 * wall), NsPerResp: wall, SyscallsPerResp: sys, CPUNsPerResp: cpu * 0.9},
				{Responses: 20000, Elapsed: time.Duration(20000 * wall), NsPerResp: wall, SyscallsPerResp: sys, CPUNsPerResp: cpu},
			}}
	}
	return []netresult.Writev{
		row(netresult.Writes, 1, 1022, 1, 504, 575),
		row(netresult.Coalesced, 1, 1022, 1, 587, 934),
		row(netresult.NetBuffers, 1, 1022, 1, 696, 1109),
		row(netresult.IOURing, 1, 1022, 1, 874, 1601),
		row(netresult.Writes, 16, 8282, 16.02, 6742, 10523),
		row(netresult.Coalesced, 16, 8282, 1, 995, 3426),
		{Way: netresult.NetBuffers, K: 16, RespBytes: 8282, Runs: 3, Err: "writev: response 7: byte 3 of 8282 differs"},
		row(netresult.IOURing, 16, 8282, 1, 1338, 3407),
	}
}

// fileServeReport is a report of rs, as netbench.FileServe makes it.
func fileServeReport(rs []netresult.FileServe) *netresult.FileServeReport {
	return &netresult.FileServeReport{SchemaVersion: netresult.FileServeSchemaVersion, Command: "iopath net bench --serve-file --runs 3",
		Started: time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC), Machine: netMachineFixture,
		Config: netresult.FileServeConfig{FileSizes: []int64{4096, 1 << 20}, Methods: netresult.FileServeMethods(), Rounds: 3,
			DurationNs: int64(time.Second), ServerCPUs: []int{1}, ClientCPUs: []int{0}},
		Results: rs}
}

// writevReport is a report of rs, as netbench.Writev makes it.
func writevReport(rs []netresult.Writev) *netresult.WritevReport {
	return &netresult.WritevReport{SchemaVersion: netresult.WritevSchemaVersion, Command: "iopath net bench --writev --parts 1,16 --runs 3",
		Started: time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC), Machine: netMachineFixture,
		Config: netresult.WritevConfig{Parts: []int{1, 16}, Ways: netresult.WritevWays(), MinPartBytes: 64, MaxPartBytes: 1024,
			Responses: 20000, Rounds: 3},
		Results: rs}
}

// TestNetFileGolden: every text format of both kinds, and --wide.
func TestNetFileGolden(t *testing.T) {
	for _, tc := range []struct {
		format, file string
		wide         bool
	}{
		{"table", "netfile.table.golden", false}, {"table", "netfile.table_wide.golden", true},
		{"csv", "netfile.csv.golden", false}, {"markdown", "netfile.markdown.golden", false},
	} {
		var b bytes.Buffer
		if err := WriteFileServe(&b, tc.format, fileServeReport(fileServeFixture()), DocOptions{Wide: tc.wide}); err != nil {
			t.Fatal(err)
		}
		golden(t, tc.file, b.Bytes())
		checkWidth(t, tc.file, b.String(), tc.wide)
		b.Reset()
		file := strings.Replace(tc.file, "netfile", "writev", 1)
		if err := WriteWritev(&b, tc.format, writevReport(writevFixture()), DocOptions{Wide: tc.wide}); err != nil {
			t.Fatal(err)
		}
		golden(t, file, b.Bytes())
		checkWidth(t, file, b.String(), tc.wide)
	}
}

// checkWidth: a default table has no line wider than a terminal of 100
// columns.
func checkWidth(t *testing.T, name, out string, wide bool) {
	t.Helper()
	if wide || !strings.HasSuffix(name, "table.golden") {
		return
	}
	for _, line := range strings.Split(out, "\n") {
		if width(line) > docWrap {
			t.Errorf("%s: line wider than %d columns: %q", name, docWrap, line)
		}
	}
}

// The ratio column and the target line are computed, not copied: check
// them against the fixture's numbers.
func TestFileServeDoc(t *testing.T) {
	rs := fileServeFixture()
	d := FileServeDoc(fileServeReport(rs))
	if c, _ := docCell(t, d, "1MiB file", "sendfile", "cpu_vs_readwrite"); math.Abs(c.Value-0.3) > 1e-9 {
		t.Errorf("sendfile ×readwrite %v, want 0.30", c.Value)
	}
	if c, _ := docCell(t, d, "1MiB file", "sendfile", "server_cpu_s_per_gb"); c.Value != 0.12 || math.Abs(c.Min-0.114) > 1e-9 || math.Abs(c.Max-0.144) > 1e-9 {
		t.Errorf("sendfile CPU-s/GB %+v, want 0.12 with the runs' extremes", c)
	}
	g := 3.1 // at run time, as the fixture computes them
	if c, _ := docCell(t, d, "1MiB file", "sendfile", "gb_per_s"); !slices.Equal(c.Runs, []float64{g * 0.9, g, g * 1.1}) || c.Value != g {
		t.Errorf("sendfile GB/s %+v, want the median 3.1 with each run's figure", c)
	}
	rep := fileServeReport(rs)
	rep.Skipped = []netresult.Skip{{Engine: netresult.IOURing, Reason: "io_uring is disabled\n(sysctl)"}}
	if d := FileServeDoc(rep); !slices.Contains(d.Notes, "io_uring skipped: io_uring is disabled (sysctl)") {
		t.Errorf("the skipped method is not in the notes %q", d.Notes)
	}
	if _, row := docCell(t, d, "4KiB file", "io_uring", "method"); !strings.HasPrefix(row.Err, "error: filesrv: io_uring: not supported") {
		t.Errorf("failed row %q", row.Err)
	}
	var heads []string
	for _, c := range d.Columns {
		if c.Headline {
			heads = append(heads, c.Key)
		}
	}
	if !slices.Equal(heads, []string{"gb_per_s", "server_cpu_s_per_gb"}) {
		t.Errorf("headline columns %q", heads)
	}
	want := "target at 1MiB: sendfile 0.30×, splice 0.50× readwrite's server CPU per GB (want ≤ 0.6×): met"
	if len(d.Notes) == 0 || d.Notes[0] != want {
		t.Errorf("notes %q, want %q first", d.Notes, want)
	}
	for i := range rs {
		if rs[i].Method == netresult.Splice && rs[i].FileSize == 1<<20 {
			rs[i].CPUSecPerGB = 0.3 // 0.75×
		}
	}
	d = FileServeDoc(fileServeReport(rs))
	if want := "splice 0.75× readwrite's server CPU per GB (want ≤ 0.6×): NOT met"; !strings.HasSuffix(d.Notes[0], want) {
		t.Errorf("no %q in %q", want, d.Notes)
	}
	for i := range rs {
		if rs[i].Method == netresult.Splice && rs[i].FileSize == 1<<20 {
			rs[i].Err = "1 of 3 runs failed: reset"
		}
	}
	d = FileServeDoc(fileServeReport(rs))
	if want := "splice 1MiB: 1 of 3 runs failed: reset"; !slices.Contains(d.Notes, want) {
		t.Errorf("a run that failed beside others is not in the notes %q", d.Notes)
	}
	if d := FileServeDoc(fileServeReport(rs[1:])); slices.ContainsFunc(d.Notes, func(n string) bool { return strings.HasPrefix(n, "target at") }) {
		t.Errorf("a target line without sendfile at 1MiB: %q", d.Notes)
	}
	// Connection counts that vary name the groups.
	rs = fileServeFixture()
	rs[0].Conns = 8
	if d := FileServeDoc(fileServeReport(rs)); d.Groups[len(d.Groups)-1].Title != "1MiB file, 8 connections" {
		t.Errorf("groups %v", d.Groups)
	}
}

func TestWritevDoc(t *testing.T) {
	d := WritevDoc(writevReport(writevFixture()))
	if c, _ := docCell(t, d, "k=16, 8282 B per response", "coalesced", "cpu_vs_writes"); math.Abs(c.Value-995.0/6742) > 1e-9 {
		t.Errorf("coalesced ×writes %v", c.Value)
	}
	cpu := 874.0 // at run time, as the fixture computes them
	if c, _ := docCell(t, d, "k=1, 1022 B per response", "io_uring", "cpu_ns_per_response"); c.Value != cpu || c.Min != cpu*0.9 || !c.Num ||
		!slices.Equal(c.Runs, []float64{cpu * 1.3, cpu * 0.9, cpu}) {
		t.Errorf("io_uring CPU ns/resp %+v", c)
	}
	if _, row := docCell(t, d, "k=16, 8282 B per response", "net.Buffers", "way"); row.Err != "error: writev: response 7: byte 3 of 8282 differs" {
		t.Errorf("failed row %q", row.Err)
	}
	if c := d.Columns[slices.IndexFunc(d.Columns, func(c Column) bool { return c.Headline })]; c.Key != "cpu_ns_per_response" {
		t.Errorf("headline %q", c.Key)
	}
}

func TestNetFileEmpty(t *testing.T) {
	for _, f := range DocFormats {
		var b bytes.Buffer
		if err := WriteFileServe(&b, f, fileServeReport(nil), DocOptions{}); err != nil || b.Len() == 0 {
			t.Errorf("%s: FileServeDoc(nil) = %v:\n%s", f, err, b.String())
		}
		b.Reset()
		if err := WriteWritev(&b, f, writevReport(nil), DocOptions{}); err != nil || b.Len() == 0 {
			t.Errorf("%s: WritevDoc(nil) = %v:\n%s", f, err, b.String())
		}
	}
	var b bytes.Buffer
	if err := NetFileHTML(&b, NetFilePage{}); err != nil || !strings.Contains(b.String(), "No results.") {
		t.Errorf("NetFileHTML(empty) = %v", err)
	}
}

func TestNetFileHTML(t *testing.T) {
	var b bytes.Buffer
	p := NetFilePage{Command: "iopath net bench --serve-file --writev", Machine: features.Machine{Kernel: "6.18", Cores: 2},
		FileServe: &netresult.FileServeReport{Results: fileServeFixture(), Skipped: []netresult.Skip{{Engine: "io_uring", Reason: "disabled <by policy>"}}},
		Writev:    &netresult.WritevReport{Results: writevFixture()}, Notes: []string{"a note <b>bold?</b>"}}
	if err := NetFileHTML(&b, p); err != nil {
		t.Fatal(err)
	}
	doc := b.String()
	// The methods that could not run are said on the page, as in the text.
	if !strings.Contains(doc, "io_uring skipped: disabled &lt;by policy&gt;") {
		t.Error("the page does not say which method was skipped and why")
	}
	checkCharts(t, doc, map[string]int{"fs-cpu-ratio": 4, "fs-cpu": 4, "fs-gbps": 4, "fs-syscalls": 4,
		"wv-cpu-ratio": 4, "wv-cpu": 4, "wv-syscalls": 4})
	checkOffline(t, doc)
	// Everything taken from the results is escaped.
	for _, raw := range []string{"<io_uring is not available>", "<b>bold?</b>"} {
		if strings.Contains(doc, raw) {
			t.Errorf("unescaped %q", raw)
		}
	}
	// The target, the failed rows, and ratios: sendfile ÷ readwrite at
	// 1 MiB, coalesced ÷ writes at k=16.
	for _, want := range []string{"target at 1MiB: sendfile 0.30×, splice 0.50×", `<td class="error" colspan="`, ">0.30<", ">0.15<"} {
		if !strings.Contains(doc, want) {
			t.Errorf("no %q in the page", want)
		}
	}
	// Rows: 8 file-serving and 8 writev under their groups' titles.
	if n := strings.Count(doc, "<tr"); n != 2+8+8+4 {
		t.Errorf("%d table rows, want 22", n)
	}
	if n := strings.Count(doc, `<tr class="group">`); n != 4 {
		t.Errorf("%d group titles, want 4", n)
	}
}

// One size (or one k) draws bars instead of lines over sizes; a page of
// one side has that side alone.
func TestNetFileOneSize(t *testing.T) {
	var fs []netresult.FileServe
	for _, r := range fileServeFixture() {
		if r.FileSize == 1<<20 {
			fs = append(fs, r)
		}
	}
	var b bytes.Buffer
	if err := NetFileHTML(&b, NetFilePage{FileServe: &netresult.FileServeReport{Results: fs}}); err != nil {
		t.Fatal(err)
	}
	doc := b.String()
	checkCharts(t, doc, map[string]int{"fs-cpu-ratio": 4, "fs-cpu": 4, "fs-gbps": 4})
	// One side given, one side drawn; and no lines over a single size.
	if !strings.Contains(doc, `<section id="file-serving">`) || strings.Contains(doc, `<section id="writev">`) || strings.Contains(doc, `"fs-syscalls"`) {
		t.Error("a page of one file size: want the file-serving section alone, without fs-syscalls")
	}
	var wv []netresult.Writev
	for _, r := range writevFixture() {
		if r.K == 1 {
			wv = append(wv, r)
		}
	}
	b.Reset()
	if err := NetFileHTML(&b, NetFilePage{Writev: &netresult.WritevReport{Results: wv}}); err != nil {
		t.Fatal(err)
	}
	doc = b.String()
	checkCharts(t, doc, map[string]int{"wv-cpu-ratio": 4, "wv-cpu": 4})
	if !strings.Contains(doc, `<section id="writev">`) || strings.Contains(doc, `<section id="file-serving">`) || strings.Contains(doc, `"wv-syscalls"`) {
		t.Error("a page of one k: want the writev section alone, without wv-syscalls")
	}
}
