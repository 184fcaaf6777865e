package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/iopath/iopath/bench"
)

// interruptedSample is sample() as an interrupt leaves it (bench.Measure
// after Ctrl-C): mmap warm made 1 of its 3 runs, the cold rows none.
func interruptedSample() *bench.Report {
	r := sample()
	r.Interrupted = true
	r.Notes = append(r.Notes, "interrupted: the results are incomplete")
	cut := &r.Results[1]
	cut.Runs = cut.Runs[:1]
	cut.Interrupted = true
	cut.Notes = append(cut.Notes, "interrupted: 1 of 3 runs made")
	for _, i := range []int{4, 5} {
		res := &r.Results[i]
		*res = bench.Result{Tool: res.Tool, Engine: res.Engine, Cache: res.Cache, Pattern: res.Pattern, BS: res.BS,
			Workers: res.Workers, QD: res.QD, Consume: res.Consume, Runs: []bench.Run{},
			Error: bench.InterruptedError, Interrupted: true}
	}
	return r
}

// Rows an interrupt kept from running say so in every format, never as
// zeros; a row it cut short shows its figures and says it was cut short.
func TestInterruptedRows(t *testing.T) {
	r := interruptedSample()

	table := string(render(t, "table", r))
	var notRun []string
	for _, l := range strings.Split(table, "\n") {
		if strings.HasPrefix(l, "pread ") || strings.HasPrefix(l, "mmap ") {
			if strings.Contains(l, " cold ") {
				notRun = append(notRun, l)
				if !strings.HasSuffix(l, "not run (interrupted)") || strings.Contains(l, "0.00") {
					t.Errorf("table: a row not run reads %q", l)
				}
			}
		}
	}
	if len(notRun) != 2 {
		t.Errorf("table: %d cold rows, want 2:\n%s", len(notRun), table)
	}
	for _, want := range []string{"mmap (warm): interrupted: 1 of 3 runs made", "interrupted: the results are incomplete", "11.43"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}

	var back struct {
		Interrupted bool `json:"interrupted"`
		Results     []struct {
			Error       string  `json:"error"`
			Interrupted bool    `json:"interrupted"`
			BytesPerS   float64 `json:"bytes_per_s"`
		} `json:"results"`
	}
	if err := json.Unmarshal(render(t, "json", r), &back); err != nil {
		t.Fatal(err)
	}
	if !back.Interrupted || back.Results[4].Error != "interrupted" || !back.Results[4].Interrupted ||
		!back.Results[1].Interrupted || back.Results[1].Error != "" || back.Results[1].BytesPerS <= 0 {
		t.Errorf("json: %+v", back)
	}

	recs, err := csv.NewReader(bytes.NewReader(render(t, "csv", r))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := func(rec []string, name string) string { return rec[slices.Index(recs[0], name)] }
	if rec := recs[5]; col(rec, "error") != "not run (interrupted)" || col(rec, "gib_per_s") != "" {
		t.Errorf("csv: a row not run: %q", rec)
	}
	if rec := recs[2]; col(rec, "error") != "" || col(rec, "gib_per_s") == "" {
		t.Errorf("csv: a row cut short: %q", rec)
	}

	md := string(render(t, "markdown", r))
	if strings.Count(md, "not run (interrupted)") != 2 || !strings.Contains(md, "interrupted: 1 of 3 runs made") {
		t.Errorf("markdown:\n%s", md)
	}

	// The rows not run have no benchmark lines; comments say why.
	gb := string(render(t, "gobench", r))
	if regexp.MustCompile(`(?m)^Benchmark.*cache=cold`).MatchString(gb) ||
		strings.Count(gb, "cache=cold/pattern=seq/bs=128KiB/workers=1/consume=checksum: not run (interrupted)") != 2 ||
		!strings.Contains(gb, "# note: interrupted: the results are incomplete") {
		t.Errorf("gobench:\n%s", gb)
	}

	if page := renderHTML(t, r); strings.Count(page, "not run (interrupted)") < 2 || !strings.Contains(page, ">not run<") {
		t.Errorf("html: the rows not run do not say so")
	}
}

func TestInterruptedTreeRows(t *testing.T) {
	r := &bench.Report{SchemaVersion: bench.SchemaVersion, Tool: "iopath", Interrupted: true,
		Tree: &bench.TreeInfo{Dir: "/t", Files: 3, Bytes: 3 << 10},
		Results: []bench.Result{
			{Engine: "raw", Cache: "warm", Workers: 1, Runs: []bench.Run{{Blocks: 3, Bytes: 3 << 10, WallNs: 1e6}},
				FilesPerS: 3000, Files: 3, Interrupted: true, Notes: []string{"interrupted: 1 of 2 runs made"}},
			{Engine: "raw", Cache: "cold", Workers: 1, Runs: []bench.Run{}, Error: bench.InterruptedError, Interrupted: true},
		}}
	table := string(render(t, "table", r))
	if !strings.Contains(table, "not run (interrupted)") || strings.Contains(table, "error: interrupted") {
		t.Errorf("tree table:\n%s", table)
	}
}
