// Package stats holds the few statistics iopath's measurements share: the
// median and min–max of a set of runs, a nearest-rank quantile, the rule
// that decides whether a sampled figure is over a limit given its
// sampling error, the verdict on a figure measured before and after
// (Judge), and the sign test of two things measured in turn (SignTest).
// Every package that summarizes runs (bench, advise, netio's benchmarks)
// calls these, so that a "median" means the same thing in every report.
//
// The functions are pure and safe for concurrent use; none modifies its
// argument.
package stats

import (
	"cmp"
	"math"
	"slices"

	"golang.org/x/perf/benchmath"
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

// Change is Judge's verdict on a figure measured before and after.
type Change int

const (
	// Unknown: a side has fewer than two runs, so there is no spread to
	// judge the change by. It is never significant.
	Unknown Change = iota
	// Noise: no change beyond the noise.
	Noise
	// Better and Worse: a significant change, judged by whether higher
	// is better.
	Better
	Worse
)

// The tests Judge's verdict comes from.
const (
	// TestMannWhitney: both sides have MinTestRuns runs or more; the change
	// is significant when a two-sided Mann–Whitney U test gives p < Alpha.
	TestMannWhitney = "mann-whitney"
	// TestMinMax: fewer runs; the change is noise when it is smaller than
	// the larger of the two sides' min–max spreads.
	TestMinMax = "min-max"
)

// MinTestRuns is the number of runs each side needs for the Mann–Whitney
// test (with 5 and 5 the smallest p it can give is 0.008, well under
// Alpha); with fewer the min–max rule decides.
const MinTestRuns = 5

// Alpha is the significance level of the Mann–Whitney test.
const Alpha = 0.05

// NoiseRule is Judge's rule in words, for readers of a comparison's JSON.
const NoiseRule = "with at least 5 runs on each side, a change is significant when a two-sided " +
	"Mann-Whitney U test of the two sides' per-run figures gives p < 0.05; with 2 to 4 runs, " +
	"a change is noise when |new - old| < max(old max - old min, new max - new min); " +
	"with a single run on a side the spread is unknown and the verdict is \"?\""

// Judgement is what Judge decided and by which test.
type Judgement struct {
	Change Change
	// Test is TestMannWhitney or TestMinMax ("" for Unknown).
	Test string
	// P is the Mann–Whitney test's p-value.
	P float64
	// Spread is the min–max rule's noise band, in the figure's unit.
	Spread float64
}

// Judge decides whether a figure measured over the runs old and then new
// changed beyond its noise (NoiseRule), and if so whether for the better:
// higherBetter says which way that is. The change, for its direction and
// the min–max rule, is that of the runs' medians.
func Judge(old, new []float64, higherBetter bool) Judgement {
	var j Judgement
	var significant bool
	mo, mn := Median(old), Median(new)
	switch n := min(len(old), len(new)); {
	case n < 2:
		return j
	case n >= MinTestRuns:
		th := benchmath.DefaultThresholds
		th.CompareAlpha = Alpha
		// NewSample sorts its values in place: give it copies.
		r := benchmath.AssumeNothing.Compare(benchmath.NewSample(slices.Clone(old), &th), benchmath.NewSample(slices.Clone(new), &th))
		j.Test, j.P = TestMannWhitney, r.P
		significant = r.P < Alpha
	default:
		j.Test, j.Spread = TestMinMax, max(Spread(old), Spread(new))
		if !Finite(j.Spread) {
			j.Spread = 0
		}
		significant = math.Abs(mn-mo) >= j.Spread
	}
	switch {
	case !significant || mn == mo:
		j.Change = Noise
	case (mn > mo) == higherBetter:
		j.Change = Better
	default:
		j.Change = Worse
	}
	return j
}

// SignTest is the exact two-sided sign test of paired differences d (one
// figure of two things measured in turn, run by run, minus each other):
// up and down count the differences above and below zero, and p is the
// chance, were each pair as likely to fall either way, of a split at
// least as lopsided as this one. Zeros and values that are not finite
// are left out; with none left p is 1. It needs no assumption about the
// noise's shape, and a pair that drifts with the machine cancels within
// itself; the price is that it needs MinSignRuns pairs to give p < Alpha
// at all.
func SignTest(d []float64) (up, down int, p float64) {
	for _, x := range d {
		switch {
		case !Finite(x) || x == 0:
		case x > 0:
			up++
		default:
			down++
		}
	}
	n, k := up+down, max(up, down)
	// P(X ≥ k) for X ~ Binomial(n, 1/2), doubled for both tails.
	tail, c := 0.0, 1.0 // c = C(n, i), walked down from i = n
	for i := n; i >= k; i-- {
		tail += c
		c = c * float64(i) / float64(n-i+1)
	}
	return up, down, min(1, 2*tail/math.Pow(2, float64(n)))
}

// MinSignRuns is the fewest pairs with which SignTest can give p < Alpha:
// 6 that all fall one way give p = 1/32.
const MinSignRuns = 6
