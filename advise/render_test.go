package advise

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/iopath/iopath/internal/stats"
)

func fakeResult(t *testing.T) *Result {
	t.Helper()
	ms := []Measurement{
		fake(ManyFiles, "readfile", 1, Warm, 138_000),
		fake(ManyFiles, "raw", 2, Warm, 481_000),
		fake(ManyFiles, "readfile", 1, Cold, 10_000),
		fake(ManyFiles, "raw", 2, Cold, 21_000),
		fake(ManyFiles, "io_uring", 2, Cold, 106_000),
		{Candidate: Candidate{"io_uring", 1}, Label: "io_uring", Cache: Warm, Skipped: "io_uring is not supported: x", Rounds: []Round{}},
		{Candidate: Candidate{"io_uring", 1}, Label: "io_uring", Cache: Cold, Skipped: "io_uring is not supported: x", Rounds: []Round{}},
	}
	setRatios(ms)
	inv := Inventory{Paths: []string{"/t"}, Kind: ManyFiles, Files: 100_000, Bytes: 100_000 << 12, Median: 4096, P90: 4096, Max: 4096,
		Skipped: map[string]int64{"broken symlink": 2}, FirstSkipped: map[string]string{"broken symlink": "/t/x"}}
	phases := bothValid()
	rec, err := Recommend(&inv, ms, phases, Warm, 1)
	if err != nil {
		t.Fatal(err)
	}
	now := AutoPick{Candidate: Candidate{"raw", 2}, Label: "raw ×2", Rule: "many-cached"}
	return &Result{SchemaVersion: SchemaVersion, Inventory: inv, Residency: 1, CacheNow: Warm, RateUnit: "files/s",
		GOMAXPROCS: 2, IOURing: IOURing{Available: true}, Budget: 20, Elapsed: 19.6, Sample: Sample{Files: 20_000, Bytes: 20_000 << 12},
		Phases: phases, Candidates: []string{"readfile", "raw ×2", "io_uring", "io_uring ×2"}, Measurements: ms,
		Recommendation: rec, Auto: checkAuto(now, map[Cache]AutoPick{Warm: now, Cold: now}, 1, rec, ms, phases),
		Snippet: Snippet(ManyFiles, rec.Candidate), Notes: []string{"a note"}}
}

func TestFactsAndAdvice(t *testing.T) {
	r := fakeResult(t)
	var facts []string
	for _, f := range r.Facts() {
		facts = append(facts, f.Key+"|"+f.Value)
	}
	want := []string{
		"data|/t: 100,000 files, 391 MiB",
		"|median 4 KiB, p90 4 KiB, largest 4 KiB",
		"|not read: 2 (broken symlink), e.g. /t/x",
		"now|100% of the data's pages are in the page cache (warm)",
		"trial|20,000 files (78.1 MiB) per pass, 19.6 s of a 20 s budget",
		"|warm 3 rounds, cold 3 rounds",
	}
	if !slices.Equal(facts, want) {
		t.Errorf("facts\n%q, want\n%q", facts, want)
	}
	out := r.Advice()
	for _, want := range []string{
		"use `raw` with 2 workers: 3.5× os.ReadFile on your 100,000 files (median 4 KiB), cached now (100% of their pages in memory).\n",
		"When the data is not cached, `io_uring` with 2 workers is faster: 11× os.ReadFile cold, where `raw` with 2 workers reaches 2.1×.\n",
		"iopath's Auto would pick `raw` with 2 workers (rule many-cached) for the data as it is now, 100% cached.\n",
		"\nIn Go (package github.com/iopath/iopath):\n\n",
		"\terr := iopath.ReadFiles(ctx, paths, func(path string, data []byte, err error) error {\n",
		"\t}, iopath.WithEngine(\"raw\"), iopath.WithWorkers(2))\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("advice lacks %q:\n%s", want, out)
		}
	}
}

// TestPerRound: the figures round by round are what the medians are over.
func TestPerRound(t *testing.T) {
	for _, m := range fakeResult(t).Measurements {
		if !m.Measured() {
			continue
		}
		f := m.PerRound(ManyFiles)
		if len(f.Rates) != len(m.Rounds) || stats.Median(f.Rates) != m.Rate || stats.Median(f.CPU) != m.CPUPer1kFiles {
			t.Errorf("%s %s: per round %+v, medians %v %v", m.Label, m.Cache, f, m.Rate, m.CPUPer1kFiles)
		}
	}
}

// TestJSONFields pins the JSON field names documented in docs/advise.md.
func TestJSONFields(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJSON(&b, fakeResult(t)); err != nil {
		t.Fatal(err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b.Bytes(), &top); err != nil {
		t.Fatal(err)
	}
	keys := func(raw json.RawMessage) []string {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		var ks []string
		for k := range m {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		return ks
	}
	first := func(raw json.RawMessage) json.RawMessage {
		var list []json.RawMessage
		if err := json.Unmarshal(raw, &list); err != nil || len(list) == 0 {
			t.Fatalf("%s: not a non-empty list", raw)
		}
		return list[0]
	}
	for _, tt := range []struct {
		what string
		raw  json.RawMessage
		want string
	}{
		{"top", b.Bytes(), "auto budget_s cache_now candidates elapsed_s gomaxprocs inventory io_uring kind measurements notes phases rate_unit recommendation residency_frac sample schema_version snippet"},
		{"inventory", top["inventory"], "bytes files files_at_least first_skipped kind paths size_max_bytes size_median_bytes size_p90_bytes skipped"},
		{"measurement", first(top["measurements"]), "baseline bytes_per_s cache cpu_s_per_1k_files engine errors files_per_s label rate_max_per_s rate_min_per_s rate_per_s ratio rounds workers"},
		{"phase", first(top["phases"]), "cache residency_frac rounds valid"},
		{"recommendation", top["recommendation"], "baseline cache engine keep_baseline label other ratio text workers"},
		{"auto", top["auto"], "agrees engine label reason rule states text workers"},
		{"sample", top["sample"], "bytes files"},
		{"io_uring", top["io_uring"], "available"},
	} {
		// Fields may be added; none of these may go or be renamed.
		if got := strings.Join(keys(tt.raw), " "); !subset(tt.want, got) {
			t.Errorf("%s fields:\n got %s\nwant %s", tt.what, got, tt.want)
		}
	}
	var m struct {
		Measurements []struct {
			Rounds []map[string]any `json:"rounds"`
		} `json:"measurements"`
	}
	json.Unmarshal(b.Bytes(), &m)
	var rk []string
	for k := range m.Measurements[0].Rounds[0] {
		rk = append(rk, k)
	}
	slices.Sort(rk)
	if got := strings.Join(rk, " "); got != "bytes cpu_s errors files passes wall_s" {
		t.Errorf("round fields: %s", got)
	}
}

// subset reports whether every field in want is in got.
func subset(want, got string) bool {
	g := strings.Fields(got)
	for _, w := range strings.Fields(want) {
		if !slices.Contains(g, w) {
			return false
		}
	}
	return true
}
