package metrics

import (
	"os"
	"testing"
	"time"

	"github.com/iopath/iopath/internal/testenv"
)

// TestMain: TestProcessCPUClockChild runs this binary again, without the
// race detector's exit sleep.
func TestMain(m *testing.M) {
	testenv.NoRaceExitSleep()
	os.Exit(m.Run())
}

func TestTicksMeasureTime(t *testing.T) {
	InitClock()
	t0 := Ticks()
	time.Sleep(20 * time.Millisecond)
	d := TicksToNs(Ticks() - t0)
	if d < int64(19*time.Millisecond) || d > int64(2*time.Second) {
		t.Fatalf("20ms sleep measured as %v with clock %s", time.Duration(d), ClockSource())
	}
}

func TestHistogramQuantilesAndBuckets(t *testing.T) {
	h := NewHistogram()
	for i := int64(1); i <= 1000; i++ {
		h.Record(i * 1000) // 1µs .. 1ms
	}
	if h.Count() != 1000 {
		t.Fatalf("count %d", h.Count())
	}
	// 3 significant digits: within 0.1%.
	for _, c := range []struct {
		q    float64
		want int64
	}{{50, 500_000}, {99, 990_000}, {99.9, 999_000}} {
		got := h.Quantile(c.q)
		if d := got - c.want; d < -c.want/1000-1 || d > c.want/1000+1 {
			t.Errorf("P%v = %d, want %d ±0.1%%", c.q, got, c.want)
		}
	}
	// A histogram carried through Buckets is the same histogram.
	g := NewHistogram()
	g.AddBuckets(h.Buckets())
	if g.Count() != h.Count() || g.Quantile(99) != h.Quantile(99) || g.Max() != h.Max() {
		t.Errorf("round trip: count %d/%d p99 %d/%d", g.Count(), h.Count(), g.Quantile(99), h.Quantile(99))
	}
	h.Record(-5)      // clamped, not lost
	h.Record(1 << 62) // clamped
	if h.Count() != 1002 {
		t.Errorf("clamped values lost: count %d", h.Count())
	}
	if NewHistogram().Quantile(99) != 0 {
		t.Error("empty histogram quantile not 0")
	}
}

func TestUsageSub(t *testing.T) {
	a, err := SelfUsage()
	if err != nil {
		t.Fatal(err)
	}
	for x := 0; x < 1e7; x++ {
		_ = x * x
	}
	b, _ := SelfUsage()
	d := b.Sub(a)
	if d.User < 0 || d.System < 0 || d.MinFlt < 0 || d.NVCSw < 0 {
		t.Fatalf("negative usage %+v", d)
	}
}

func BenchmarkTicks(b *testing.B) {
	for b.Loop() {
		Ticks()
	}
}

func BenchmarkNanotime(b *testing.B) {
	for b.Loop() {
		Nanotime()
	}
}

func BenchmarkRecordTicks(b *testing.B) {
	h := NewHistogram()
	for i := int64(0); b.Loop(); i++ {
		h.RecordTicks(1000 + i&1023)
	}
}

func TestParseProcStat(t *testing.T) {
	got, err := parseProcStat([]byte("cpu  100 5 50 9000 40 3 2 7 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\ncpu1 0 0 0 9 0 0 0 0 0 0\nintr 5 6\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := 167 * TickDuration; got.Busy != want {
		t.Errorf("busy = %v, want %v (user+nice+system+irq+softirq+steal)", got.Busy, want)
	}
	if len(got.PerCPU) != 2 || got.PerCPU[0] != 27*TickDuration || got.PerCPU[1] != 0 {
		t.Errorf("per CPU = %v", got.PerCPU)
	}
	later := CPUStat{PerCPU: []time.Duration{28 * TickDuration, 0}}
	if n := later.Moved(got); n != 1 {
		t.Errorf("moved = %d, want 1", n)
	}
	for _, bad := range []string{"", "intr 1 2 3\n", "cpu 1 2 x 4 5 6 7 8\n"} {
		if _, err := parseProcStat([]byte(bad)); err == nil {
			t.Errorf("parseProcStat(%q) accepted", bad)
		}
	}
	if _, err := SystemCPU(); err != nil {
		t.Fatal(err)
	}
}

func TestIOThreadDelta(t *testing.T) {
	before := map[int]time.Duration{1: 10, 2: 20}
	after := map[int]time.Duration{1: 15, 3: 7} // 2 exited, 3 was born
	if got := IOThreadDelta(before, after); got != 12 {
		t.Errorf("delta = %v, want 12", got)
	}
	if m, err := IOThreadCPU(); err != nil || len(m) != 0 {
		t.Errorf("a test process has no io_uring threads: %v %v", m, err)
	}
}

func TestIsIOThread(t *testing.T) {
	for comm, want := range map[string]bool{
		"iou-sqp-4242": true, "iou-wrk-4242": true, "iopath": false, "kworker/0:1": false, "iou-": false,
	} {
		if got := isIOThread(comm); got != want {
			t.Errorf("isIOThread(%q) = %v", comm, got)
		}
	}
}
