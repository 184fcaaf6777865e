package advise

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// fake builds a measured Measurement with one round at rate (files/s for
// ManyFiles, bytes/s for OneFile).
func fake(kind Kind, engine string, workers int, c Cache, rate float64) Measurement {
	cand := Candidate{engine, workers}
	m := Measurement{Candidate: cand, Label: cand.Label(), Cache: c,
		Baseline: engine == "readfile" || (engine == "read" && workers == 1)}
	rd := Round{Passes: 1, Seconds: 1, Files: int64(rate), Bytes: int64(rate) * 4096, CPU: 0.1}
	if kind == OneFile {
		rd.Files, rd.Bytes = 0, int64(rate)
	}
	m.Rounds = []Round{rd}
	m.summarize(kind)
	return m
}

func manyInv() *Inventory {
	return &Inventory{Paths: []string{"/data"}, Kind: ManyFiles, Files: 48000, Bytes: 48000 * 9 << 10, Median: 9 << 10}
}

func bothValid() []Phase {
	return []Phase{{Cache: Warm, Rounds: 3, Valid: true}, {Cache: Cold, Rounds: 3, Valid: true}}
}

func TestRecommendPicksFastest(t *testing.T) {
	ms := []Measurement{
		fake(ManyFiles, "readfile", 1, Warm, 100_000),
		fake(ManyFiles, "raw", 1, Warm, 200_000),
		fake(ManyFiles, "raw", 2, Warm, 260_000),
		fake(ManyFiles, "io_uring", 2, Warm, 150_000),
		fake(ManyFiles, "readfile", 1, Cold, 10_000),
		fake(ManyFiles, "raw", 2, Cold, 19_000),
		fake(ManyFiles, "io_uring", 2, Cold, 41_000),
	}
	setRatios(ms)
	rec, err := Recommend(manyInv(), ms, bothValid(), Warm, 0.98)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Candidate != (Candidate{"raw", 2}) || rec.Cache != Warm || rec.KeepBaseline {
		t.Fatalf("got %+v, want raw ×2 warm", rec)
	}
	want := "use `raw` with 2 workers: 2.6× os.ReadFile on your 48,000 files (median 9 KiB), cached now (98% of their pages in memory)."
	if rec.Text != want {
		t.Errorf("text\n got %q\nwant %q", rec.Text, want)
	}
	if rec.Other == nil {
		t.Fatal("no sentence about the cold state, whose winner differs")
	}
	if rec.Other.Candidate != (Candidate{"io_uring", 2}) || rec.Other.Cache != Cold {
		t.Errorf("other: %+v", rec.Other)
	}
	wantOther := "When the data is not cached, `io_uring` with 2 workers is faster: 4.1× os.ReadFile cold, where `raw` with 2 workers reaches 1.9×."
	if rec.Other.Text != wantOther {
		t.Errorf("other text\n got %q\nwant %q", rec.Other.Text, wantOther)
	}
}

func TestRecommendNoOtherSentenceWhenSameWinner(t *testing.T) {
	ms := []Measurement{
		fake(ManyFiles, "readfile", 1, Warm, 100_000),
		fake(ManyFiles, "raw", 2, Warm, 260_000),
		fake(ManyFiles, "readfile", 1, Cold, 10_000),
		fake(ManyFiles, "raw", 2, Cold, 30_000),
		fake(ManyFiles, "io_uring", 2, Cold, 29_000),
	}
	setRatios(ms)
	rec, err := Recommend(manyInv(), ms, bothValid(), Warm, 1)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Other != nil {
		t.Errorf("other sentence %q although raw ×2 wins cold too", rec.Other.Text)
	}
}

func TestRecommendKeepsBaselineWithinNoise(t *testing.T) {
	ms := []Measurement{
		fake(ManyFiles, "readfile", 1, Warm, 100_000),
		fake(ManyFiles, "raw", 1, Warm, 103_000),
		fake(ManyFiles, "pool", 128, Warm, 90_000),
	}
	setRatios(ms)
	rec, err := Recommend(manyInv(), ms, []Phase{{Cache: Warm, Rounds: 3, Valid: true}}, Warm, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !rec.KeepBaseline || rec.Engine != "readfile" {
		t.Fatalf("got %+v: a 3%% gain is noise, want the baseline kept", rec)
	}
	for _, s := range []string{"keep os.ReadFile", "nothing else was 5% faster", "`raw` with 1 worker, reached 1.0×"} {
		if !strings.Contains(rec.Text, s) {
			t.Errorf("text %q lacks %q", rec.Text, s)
		}
	}
}

func TestRecommendColdNow(t *testing.T) {
	ms := []Measurement{
		fake(ManyFiles, "readfile", 1, Warm, 100_000),
		fake(ManyFiles, "raw", 2, Warm, 260_000),
		fake(ManyFiles, "io_uring", 2, Warm, 120_000),
		fake(ManyFiles, "readfile", 1, Cold, 10_000),
		fake(ManyFiles, "raw", 2, Cold, 19_000),
		fake(ManyFiles, "io_uring", 2, Cold, 41_000),
	}
	setRatios(ms)
	rec, err := Recommend(manyInv(), ms, bothValid(), Cold, 0.02)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Candidate != (Candidate{"io_uring", 2}) || rec.Cache != Cold {
		t.Fatalf("got %+v, want io_uring ×2 for cold data", rec)
	}
	if !strings.Contains(rec.Text, "4.1× os.ReadFile") || !strings.Contains(rec.Text, "not cached now (2% of their pages in memory)") {
		t.Errorf("text %q", rec.Text)
	}
	if rec.Other == nil || !strings.HasPrefix(rec.Other.Text, "When the data is cached, `raw` with 2 workers is faster: 2.6× os.ReadFile warm, where `io_uring` with 2 workers reaches 1.2×") {
		t.Errorf("other: %+v", rec.Other)
	}
}

func TestRecommendFallsBackToOtherState(t *testing.T) {
	ms := []Measurement{
		fake(ManyFiles, "readfile", 1, Warm, 100_000),
		fake(ManyFiles, "raw", 2, Warm, 260_000),
		fake(ManyFiles, "readfile", 1, Cold, 10_000),
		fake(ManyFiles, "io_uring", 2, Cold, 41_000),
	}
	setRatios(ms)
	// The cold drop did not take: its figures must not be used.
	phases := []Phase{{Cache: Warm, Rounds: 3, Valid: true}, {Cache: Cold, Rounds: 3, Valid: false, Residency: 0.9}}
	rec, err := Recommend(manyInv(), ms, phases, Cold, 0.1)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Candidate != (Candidate{"raw", 2}) || rec.Cache != Warm || rec.Other != nil {
		t.Fatalf("got %+v, want raw ×2 from the warm trial and no cold sentence", rec)
	}
	if !strings.Contains(rec.Text, "Measured cached only: the cold trial gave no answer (the cache state did not hold).") {
		t.Errorf("text %q does not say the cold trial failed", rec.Text)
	}
	// Skipped phase.
	phases[1] = Phase{Cache: Cold, Skipped: "the budget left too little time"}
	rec, err = Recommend(manyInv(), ms, phases, Cold, 0.1)
	if err != nil || !strings.Contains(rec.Text, "(the budget left too little time)") {
		t.Errorf("skipped cold phase: %v, %q", err, rec.Text)
	}
}

func TestRecommendNothingMeasured(t *testing.T) {
	ms := []Measurement{{Candidate: Candidate{"readfile", 1}, Label: "readfile", Cache: Warm, Baseline: true, Skipped: "x"}}
	_, err := Recommend(manyInv(), ms, []Phase{{Cache: Warm, Valid: true}}, Warm, 1)
	if !errors.Is(err, ErrNoMeasurement) {
		t.Fatalf("got %v, want ErrNoMeasurement", err)
	}
}

func TestRecommendOneFile(t *testing.T) {
	ms := []Measurement{
		fake(OneFile, "read", 1, Warm, 6e9),
		fake(OneFile, "pread", 2, Warm, 12e9),
		fake(OneFile, "mmap", 1, Warm, 9e9),
		fake(OneFile, "read", 1, Cold, 1.2e9),
		fake(OneFile, "pread", 2, Cold, 1.5e9),
	}
	setRatios(ms)
	inv := &Inventory{Paths: []string{"/big"}, Kind: OneFile, Files: 1, Bytes: 1 << 30, Median: 1 << 30}
	rec, err := Recommend(inv, ms, bothValid(), Warm, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := "use `pread` with 2 workers: 2.0× plain read on your 1 GiB file, cached now (100% of its pages in memory)."
	if rec.Text != want || rec.Other != nil {
		t.Errorf("got %q (other %+v)\nwant %q", rec.Text, rec.Other, want)
	}
}

func TestSummarizeMedians(t *testing.T) {
	m := Measurement{Rounds: []Round{
		{Files: 100, Bytes: 400, Seconds: 1, CPU: 0.1},
		{Files: 300, Bytes: 1200, Seconds: 1, CPU: 0.3, Errors: 2},
		{Files: 200, Bytes: 800, Seconds: 1, CPU: 0.2},
	}}
	m.summarize(ManyFiles)
	if m.Rate != 200 || m.RateMin != 100 || m.RateMax != 300 || m.FilesPerS != 200 || m.BytesPerS != 800 || m.Errors != 2 {
		t.Errorf("got %+v", m)
	}
	if d := m.CPUPer1kFiles - 1; d > 1e-9 || d < -1e-9 {
		t.Errorf("CPU per 1k files %v, want 1", m.CPUPer1kFiles)
	}
}

func TestRoundsFor(t *testing.T) {
	for _, tt := range []struct {
		left time.Duration
		n    int
		over time.Duration
		want int
	}{
		{12 * time.Second, 6, 0, 5},
		{2 * time.Second, 6, 0, 3},
		{2 * time.Second, 6, 100 * time.Millisecond, 2},
		{200 * time.Millisecond, 6, 0, 1},
		{50 * time.Millisecond, 6, 0, 0},
		{time.Second, 0, 0, 0},
	} {
		if got := roundsFor(tt.left, tt.n, tt.over); got != tt.want {
			t.Errorf("roundsFor(%v, %d, %v) = %d, want %d", tt.left, tt.n, tt.over, got, tt.want)
		}
	}
}

func TestFormatting(t *testing.T) {
	for _, tt := range []struct{ got, want string }{
		{count(0), "0"}, {count(999), "999"}, {count(48000), "48,000"}, {count(1234567), "1,234,567"},
		{humanSize(300), "300 B"}, {humanSize(9 << 10), "9 KiB"}, {humanSize(4700), "4.6 KiB"}, {humanSize(1 << 30), "1 GiB"},
		{ratio(2.64), "2.6×"}, {ratio(10.6), "11×"},
		{Candidate{"raw", 2}.Label(), "raw ×2"}, {Candidate{"readfile", 1}.Label(), "readfile"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

// When nothing could be measured, the error gives each candidate's reason.
func TestNotMeasuredReasons(t *testing.T) {
	ms := []Measurement{
		{Label: "readfile", Cache: Warm, Skipped: "failed: open /x: input/output error"},
		{Label: "io_uring", Cache: Warm, Skipped: "io_uring is not supported: disabled"},
		{Label: "io_uring", Cache: Cold, Skipped: "io_uring is not supported: disabled"},
		{Label: "raw", Cache: Warm},
		{Label: "pool", Cache: Warm, Rounds: []Round{{Passes: 1, Files: 3, Seconds: 1}}, Rate: 3},
	}
	want := "readfile: failed: open /x: input/output error; io_uring: io_uring is not supported: disabled; raw: no round finished"
	if got := notMeasured(ms); got != want {
		t.Errorf("notMeasured = %q, want %q", got, want)
	}
}
