// Package stats holds the few statistics iopath's measurements share: the
// median and min–max of a set of runs, a nearest-rank quantile, and the
// rule that decides whether a sampled figure is over a limit given its
// sampling error. Every package that summarizes runs (bench, advise,
// netio's benchmarks) calls these, so that a "median" means the same
// thing in every report.
//
// The functions are pure and safe for concurrent use; none modifies its
// argument.
package stats

import (
	"cmp"
	"math"
	"slices"
)

// Median is the median of v: the middle value, or the mean of the two
// middle values for an even count. It is 0 for an empty v.
func Median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// MedianOf is the median of get over xs (0 for an empty xs): the median of
// one figure of a set of runs.
func MedianOf[T any](xs []T, get func(T) float64) float64 {
	return Median(Map(xs, get))
}

// MinMax is the smallest and largest value of v, (0, 0) for an empty v.
func MinMax(v []float64) (lo, hi float64) {
	if len(v) == 0 {
		return 0, 0
	}
	return slices.Min(v), slices.Max(v)
}

// MinMaxOf is MinMax of get over xs.
func MinMaxOf[T any](xs []T, get func(T) float64) (lo, hi float64) {
	return MinMax(Map(xs, get))
}

// Spread is the width of v's range, max − min: the noise band of a figure
// over runs. It is 0 for fewer than two values (unknown, not zero noise:
// callers that must tell the two apart check the count).
func Spread(v []float64) float64 {
	if len(v) < 2 {
		return 0
	}
	lo, hi := MinMax(v)
	return hi - lo
}

// Map is get applied to each of xs, in order.
func Map[T any](xs []T, get func(T) float64) []float64 {
	v := make([]float64, len(xs))
	for i, x := range xs {
		v[i] = get(x)
	}
	return v
}

// NearestRank is the q-quantile (0 ≤ q ≤ 1) of sorted, which must be in
// ascending order, by the nearest-rank method: the element at index
// ⌊q·n⌋, clamped to the last. It is the zero value for an empty sorted.
// Unlike an interpolated quantile it is always one of the values, which
// is what a size sample (a median file size) must report.
func NearestRank[T cmp.Ordered](sorted []T, q float64) T {
	var zero T
	if len(sorted) == 0 {
		return zero
	}
	i := int(q * float64(len(sorted)))
	return sorted[max(0, min(i, len(sorted)-1))]
}

// Exceeds is the rule for a figure sampled with a known rounding error:
// value is over limit only when it exceeds limit by more than slack, the
// sampling error. A slack as large as the limit leaves nothing to judge:
// then unknown is true and over false. A slack below zero counts as zero.
//
// bench's noise guard applies it to the CPU other processes used during a
// run (sampled from /proc/stat in whole clock ticks).
func Exceeds(value, limit, slack float64) (over, unknown bool) {
	slack = max(slack, 0)
	if slack >= limit {
		return false, true
	}
	return value-slack > limit, false
}

// Finite reports whether f is a number a summary may use: not NaN and not
// ±Inf (a rate over a zero duration, a ratio to a zero baseline).
func Finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }
