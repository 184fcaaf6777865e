package advise

import (
	"strings"
	"testing"
)

func TestVerdict(t *testing.T) {
	ms := []Measurement{
		fake(OneFile, "read", 1, Warm, 6e9),
		fake(OneFile, "pread", 1, Warm, 6.2e9),
		fake(OneFile, "pread", 2, Warm, 6.4e9),
		fake(OneFile, "mmap", 1, Warm, 11e9),
		fake(OneFile, "mmap", 2, Warm, 10.8e9),
		{Candidate: Candidate{"io_uring", 1}, Label: "io_uring", Cache: Warm, Skipped: "io_uring is not supported: disabled by IOPATH_DISABLE_IO_URING=1"},
	}
	setRatios(ms)
	win, _, ok := pick(ms, Warm)
	if !ok || win.Engine != "mmap" || win.Workers != 1 {
		t.Fatalf("winner %+v", win)
	}
	pk := func(e string, w int) AutoPick {
		c := Candidate{e, w}
		return AutoPick{Candidate: c, Label: c.Label(), Rule: "r"}
	}
	for _, tt := range []struct {
		name     string
		p        AutoPick
		agrees   bool
		measured bool
		text     string
	}{
		{"same", pk("mmap", 1), true, true, "cached: it picks `mmap` with 1 worker (rule r): the trial agrees."},
		{"within 5%", pk("mmap", 2), true, true, "within 5% of the fastest here (1.8× against 1.8× for `mmap` with 1 worker)"},
		{"slower", pk("pread", 2), false, true, "which measured 1.1× against 1.8× for `mmap` with 1 worker: that rule may be miscalibrated"},
		{"skipped", pk("io_uring", 1), false, false, "which the trial could not measure: io_uring is not supported: disabled by IOPATH_DISABLE_IO_URING=1."},
		{"absent", pk("readv", 1), false, false, "which the trial could not measure: it was not among the candidates."},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := verdict(Warm, tt.p, win, ms)
			if s.Agrees != tt.agrees || s.Measured != tt.measured || !strings.Contains(s.Text, tt.text) {
				t.Errorf("got agrees=%v measured=%v %q\nwant agrees=%v measured=%v, text with %q", s.Agrees, s.Measured, s.Text, tt.agrees, tt.measured, tt.text)
			}
		})
	}
}

func TestCheckAutoPerState(t *testing.T) {
	ms := []Measurement{
		fake(ManyFiles, "readfile", 1, Warm, 100_000),
		fake(ManyFiles, "raw", 2, Warm, 260_000),
		fake(ManyFiles, "io_uring", 2, Warm, 150_000),
		fake(ManyFiles, "readfile", 1, Cold, 10_000),
		fake(ManyFiles, "raw", 2, Cold, 19_000),
		fake(ManyFiles, "io_uring", 2, Cold, 41_000),
	}
	setRatios(ms)
	rec, err := Recommend(manyInv(), ms, bothValid(), Warm, 1)
	if err != nil {
		t.Fatal(err)
	}
	raw2, uring2 := Candidate{"raw", 2}, Candidate{"io_uring", 2}
	now := AutoPick{Candidate: raw2, Label: raw2.Label(), Rule: "many-cached"}
	by := map[Cache]AutoPick{Warm: now, Cold: {Candidate: raw2, Label: raw2.Label(), Rule: "x"}}
	a := checkAuto(now, by, 1, rec, ms, bothValid())
	if !a.Agrees || len(a.States) != 2 || !a.States[0].Agrees || a.States[1].Agrees {
		t.Fatalf("auto picking raw ×2 cold too: %+v", a)
	}
	if !strings.HasPrefix(a.Text, "iopath's Auto would pick `raw` with 2 workers (rule many-cached) for the data as it is now, 100% cached.") ||
		!strings.Contains(a.Text, "\n  not cached: it picks `raw` with 2 workers (rule x), which measured 1.9× against 4.1×") {
		t.Errorf("text %q", a.Text)
	}
	by[Cold] = AutoPick{Candidate: uring2, Label: uring2.Label(), Rule: "many-cold"}
	if a := checkAuto(now, by, 1, rec, ms, bothValid()); !a.States[1].Agrees {
		t.Errorf("auto picking io_uring ×2 cold: %+v", a.States[1])
	}
	// A state whose drop did not take is not judged.
	phases := []Phase{{Cache: Warm, Rounds: 3, Valid: true}, {Cache: Cold, Rounds: 3, Valid: false}}
	if a := checkAuto(now, by, 1, rec, ms, phases); len(a.States) != 1 {
		t.Errorf("judged %d states, want only the valid warm one", len(a.States))
	}
}
