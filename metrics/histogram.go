package metrics

import (
	"github.com/HdrHistogram/hdrhistogram-go"
)

// Latency histograms cover 1 ns to 100 s with 3 significant digits: a
// recorded value is reported within 0.1% of what was recorded (the
// histogram's stated error bound).
const (
	minLatencyNs = 1
	maxLatencyNs = 100e9
	sigFigs      = 3
)

// Histogram is a log-linear histogram of nanosecond latencies.
type Histogram struct {
	h *hdrhistogram.Histogram
}

// NewHistogram returns an empty latency histogram.
func NewHistogram() *Histogram {
	InitClock()
	return &Histogram{h: hdrhistogram.New(minLatencyNs, maxLatencyNs, sigFigs)}
}

// Record adds one latency in nanoseconds. Values out of range are clamped.
func (h *Histogram) Record(ns int64) {
	if ns < minLatencyNs {
		ns = minLatencyNs
	} else if ns > maxLatencyNs {
		ns = maxLatencyNs
	}
	_ = h.h.RecordValue(ns)
}

// RecordTicks adds one latency measured as a difference of Ticks.
func (h *Histogram) RecordTicks(d int64) { h.Record(TicksToNs(d)) }

// RecordN adds n identical latencies.
func (h *Histogram) RecordN(ns int64, n int64) {
	if ns < minLatencyNs {
		ns = minLatencyNs
	} else if ns > maxLatencyNs {
		ns = maxLatencyNs
	}
	_ = h.h.RecordValues(ns, n)
}

// Merge adds every value of o into h.
func (h *Histogram) Merge(o *Histogram) {
	if o == nil {
		return
	}
	h.h.Merge(o.h)
}

// Count is the number of recorded values.
func (h *Histogram) Count() int64 { return h.h.TotalCount() }

// Quantile returns the value at quantile q in [0, 100] (50 = median), or 0
// when the histogram is empty.
func (h *Histogram) Quantile(q float64) int64 {
	if h.h.TotalCount() == 0 {
		return 0
	}
	return h.h.ValueAtQuantile(q)
}

// Max is the largest recorded value.
func (h *Histogram) Max() int64 { return h.h.Max() }

// Mean is the mean of the recorded values.
func (h *Histogram) Mean() float64 { return h.h.Mean() }

// Reset empties the histogram.
func (h *Histogram) Reset() { h.h.Reset() }

// Snapshot is a histogram in a form that survives JSON, for carrying a
// child's histogram back to the runner.
type Snapshot = hdrhistogram.Snapshot

// Export returns a snapshot of h.
func (h *Histogram) Export() *Snapshot { return h.h.Export() }

// Import rebuilds a histogram from a snapshot.
func Import(s *Snapshot) *Histogram {
	if s == nil {
		return NewHistogram()
	}
	return &Histogram{h: hdrhistogram.Import(s)}
}

// Buckets returns the histogram's non-empty buckets as (value, count) pairs,
// value being the lowest value the bucket holds: a compact form for carrying
// a histogram from a child process to the runner.
func (h *Histogram) Buckets() [][2]int64 {
	var out [][2]int64
	for _, b := range h.h.Distribution() {
		if b.Count > 0 {
			out = append(out, [2]int64{b.From, b.Count})
		}
	}
	return out
}

// AddBuckets records the pairs returned by Buckets.
func (h *Histogram) AddBuckets(b [][2]int64) {
	for _, p := range b {
		if p[1] > 0 {
			h.RecordN(p[0], p[1])
		}
	}
}
