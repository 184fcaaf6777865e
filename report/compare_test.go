package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/iopath/iopath/features"
)

// cmpDoc builds a Doc of two key columns (engine, cache), a headline
// figure where higher is better and one where lower is better.
func cmpDoc(groups ...Group) *Doc {
	return &Doc{Kind: "test", Columns: []Column{
		{Key: "engine", Title: "engine", Left: true},
		{Key: "cache", Title: "cache", Left: true},
		{Key: "gib_per_s", Title: "GiB/s", Unit: "GiB/s", Better: Higher, Prec: 2, Headline: true},
		{Key: "other", Title: "other", Prec: 1},
		{Key: "cpu_s_per_gib", Title: "CPU-s/GiB", Better: Lower, Prec: 3, Headline: true},
	}, Groups: groups}
}

func cmpRow(engine, cache string, gib, cpu []float64) Row {
	return Row{Cells: []Cell{TextCell(engine), TextCell(cache), Runs(gib), Figure(1), Runs(cpu)}}
}

func TestCompareVerdicts(t *testing.T) {
	five := func(v float64) []float64 { return []float64{v, v * 1.01, v * 0.99, v * 1.005, v * 0.995} }
	old := cmpDoc(Group{Title: "seq", Rows: []Row{
		cmpRow("pread", "warm", five(8), five(0.1)),
		cmpRow("mmap", "warm", five(10), five(0.1)),
		cmpRow("readv", "warm", []float64{5, 6, 7}, []float64{0.2, 0.3}),
		cmpRow("null", "warm", []float64{50}, []float64{0.01}),
		cmpRow("gone", "warm", five(1), five(1)),
		{Cells: []Cell{TextCell("io_uring"), TextCell("warm")}, Err: "io_uring_setup: operation not permitted"},
	}})
	newDoc := cmpDoc(Group{Title: "seq", Rows: []Row{
		cmpRow("pread", "warm", five(9), five(0.08)),                             // faster, better: every run beyond
		cmpRow("mmap", "warm", []float64{10.1, 9.9, 10, 10.05, 9.95}, five(0.1)), // overlapping: noise
		cmpRow("readv", "warm", []float64{6.5, 7, 8}, []float64{0.25, 0.26}),     // within 2 GiB/s spread
		cmpRow("null", "warm", []float64{60, 61}, []float64{0.01, 0.01}),         // one run on the old side
		{Cells: []Cell{TextCell("io_uring"), TextCell("warm")}, Err: "io_uring_setup: operation not permitted"},
		cmpRow("new", "warm", five(1), five(1)),
	}})
	c := compare(compared{doc: old, src: CompareSource{Kind: "test"}}, compared{doc: newDoc, src: CompareSource{Kind: "test"}})
	if len(c.Metrics) != 2 || c.Metrics[0].Key != "gib_per_s" || c.Metrics[1].Better != "lower" {
		t.Fatalf("metrics = %+v", c.Metrics)
	}
	want := map[string]struct {
		status   CompareStatus
		gib, cpu Verdict
		test     string
	}{
		"pread warm":    {StatusMatched, VerdictFaster, VerdictBetter, TestMannWhitney},
		"mmap warm":     {StatusMatched, VerdictNoise, VerdictNoise, TestMannWhitney},
		"readv warm":    {StatusMatched, VerdictNoise, VerdictNoise, TestMinMax},
		"null warm":     {StatusMatched, VerdictUnknown, VerdictUnknown, ""},
		"io_uring warm": {StatusError, "", "", ""},
		"new warm":      {StatusAdded, "", "", ""},
		"gone warm":     {StatusRemoved, "", "", ""},
	}
	if len(c.Rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(c.Rows), len(want))
	}
	for _, r := range c.Rows {
		w, ok := want[r.Name()]
		if !ok {
			t.Errorf("unexpected row %q", r.Name())
			continue
		}
		if r.Status != w.status {
			t.Errorf("%s: status %s, want %s", r.Name(), r.Status, w.status)
		}
		if w.status != StatusMatched {
			if len(r.Deltas) != 0 {
				t.Errorf("%s: deltas on a %s row", r.Name(), r.Status)
			}
			continue
		}
		if g, cp := r.Deltas[0], r.Deltas[1]; g.Verdict != w.gib || cp.Verdict != w.cpu || g.Test != w.test {
			t.Errorf("%s: verdicts %s (%s, p=%.3f) / %s, want %s (%s) / %s", r.Name(), g.Verdict, g.Test, g.P, cp.Verdict, w.gib, w.test, w.cpu)
		}
	}
	if got := c.Rows[len(c.Rows)-1].Name(); got != "gone warm" {
		t.Errorf("removed rows come last; last is %q", got)
	}
	s := c.Summary
	if s.Faster != 1 || s.Noise != 2 || s.Unknown != 1 || s.Added != 1 || s.Removed != 1 || s.Failed != 1 {
		t.Errorf("summary %+v", s)
	}
	// A drop beyond the noise, a row now failing and a removed row are
	// regressions; the rest are not.
	if rs := c.Regressions(0); len(rs) != 1 || rs[0].Name() != "gone warm" {
		t.Errorf("regressions = %v", rs)
	}
}

// TestCompareRegressions: a slower headline beyond the test counts above
// the threshold only; a row that now fails counts; not run does not.
func TestCompareRegressions(t *testing.T) {
	five := func(v float64) []float64 { return []float64{v, v * 1.01, v * 0.99, v * 1.005, v * 0.995} }
	old := cmpDoc(Group{Rows: []Row{
		cmpRow("a", "warm", five(10), five(1)),
		cmpRow("b", "warm", five(10), five(1)),
		cmpRow("c", "warm", five(10), five(1)),
	}})
	nw := cmpDoc(Group{Rows: []Row{
		cmpRow("a", "warm", five(8), five(1)), // -20%
		{Cells: []Cell{TextCell("b"), TextCell("warm")}, Err: "read: input/output error"},
		{Cells: []Cell{TextCell("c"), TextCell("warm")}, Err: "interrupted"},
	}})
	c := compare(compared{doc: old}, compared{doc: nw})
	names := func(rs []*CompareRow) string {
		var s []string
		for _, r := range rs {
			s = append(s, r.Name())
		}
		return strings.Join(s, ",")
	}
	if got := names(c.Regressions(5)); got != "a warm,b warm" {
		t.Errorf("Regressions(5) = %s", got)
	}
	if got := names(c.Regressions(25)); got != "b warm" {
		t.Errorf("Regressions(25) = %s", got)
	}
	if c.Summary.Slower != 1 || c.Summary.Failed != 1 || c.Summary.NotRun != 1 {
		t.Errorf("summary %+v", c.Summary)
	}
}

func TestCompareDifferences(t *testing.T) {
	m := features.Machine{Kernel: "6.18", CPUModel: "AMD EPYC", Cores: 2}
	m2 := m
	m2.Cores = 4
	old := CompareSource{Kind: "file", Machine: m, Props: []Field{{"file size", "1GiB"}, {"fio", "3.33"}}}
	nw := CompareSource{Kind: "file", Machine: m2, Props: []Field{{"file size", "2GiB"}}}
	c := compare(compared{doc: cmpDoc(), src: old}, compared{doc: cmpDoc(), src: nw})
	if !c.MachineDiffers() {
		t.Error("cores differ: MachineDiffers() = false")
	}
	var got []string
	for _, d := range c.Differences {
		got = append(got, d.What+":"+d.Old+"→"+d.New)
	}
	if want := "cores:2→4,file size:1GiB→2GiB,fio:3.33→"; strings.Join(got, ",") != want {
		t.Errorf("differences %s, want %s", strings.Join(got, ","), want)
	}
}

// TestCompareFormats: every format renders, the table fits 100 columns and
// the JSON is of kind compare.
func TestCompareFormats(t *testing.T) {
	old := cmpDoc(Group{Title: "seq, bs 128KiB", Rows: []Row{cmpRow("pread", "warm", []float64{8, 8.1}, []float64{0.1, 0.11})}},
		Group{Title: "rand, bs 4KiB", Rows: []Row{cmpRow("pread", "warm", []float64{1}, []float64{0.5})}})
	nw := cmpDoc(Group{Title: "seq, bs 128KiB", Rows: []Row{cmpRow("pread", "warm", []float64{9, 9.1}, []float64{0.1, 0.1})}},
		Group{Title: "rand, bs 4KiB", Rows: []Row{cmpRow("pread", "warm", []float64{1.1}, []float64{0.5})}})
	c := compare(compared{doc: old, src: CompareSource{Path: "old.json"}}, compared{doc: nw, src: CompareSource{Path: "new.json"}})
	for _, f := range KindFormats {
		var b bytes.Buffer
		if err := WriteCompare(&b, f, c, DocOptions{}); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out := b.String()
		switch f {
		case "table":
			for _, l := range strings.Split(out, "\n") {
				if width(l) > docWrap {
					t.Errorf("table line of %d columns: %q", width(l), l)
				}
			}
			for _, s := range []string{"old.json", "faster", "? (1 run)", "seq, bs 128KiB", "summary: 1 faster"} {
				if !strings.Contains(out, s) {
					t.Errorf("table lacks %q:\n%s", s, out)
				}
			}
		case "json":
			if !strings.HasPrefix(out, "{\n  \"schema_version\": 1,\n  \"kind\": \"compare\"") {
				t.Errorf("json starts %q", out[:min(len(out), 80)])
			}
		case "markdown":
			if !strings.Contains(out, "| pread |") {
				t.Errorf("markdown lacks the row:\n%s", out)
			}
		}
	}
}
