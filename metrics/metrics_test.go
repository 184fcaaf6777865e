package metrics

import (
	"testing"
	"time"
)

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
