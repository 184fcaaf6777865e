package stats

import (
	"math"
	"slices"
	"testing"
)

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    []float64
		want float64
	}{
		{"empty", nil, 0},
		{"one", []float64{7}, 7},
		{"two", []float64{1, 4}, 2.5},
		{"odd-unsorted", []float64{9, 1, 5}, 5},
		{"even-unsorted", []float64{10, 2, 8, 4}, 6},
		{"duplicates", []float64{3, 3, 1, 3}, 3},
		{"negative", []float64{-5, -1, -3}, -3},
		{"outlier", []float64{1, 2, 3, 1e9, 2}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			orig := append([]float64(nil), tc.v...)
			if got := Median(tc.v); got != tc.want {
				t.Errorf("Median(%v) = %v, want %v", orig, got, tc.want)
			}
			for i := range orig {
				if tc.v[i] != orig[i] {
					t.Fatalf("Median reordered its argument: %v, was %v", tc.v, orig)
				}
			}
		})
	}
}

func TestMedianOfMinMaxOf(t *testing.T) {
	type run struct{ rate float64 }
	runs := []run{{30}, {10}, {20}, {40}}
	get := func(r run) float64 { return r.rate }
	if got := MedianOf(runs, get); got != 25 {
		t.Errorf("MedianOf = %v, want 25", got)
	}
	if lo, hi := MinMaxOf(runs, get); lo != 10 || hi != 40 {
		t.Errorf("MinMaxOf = %v, %v, want 10, 40", lo, hi)
	}
	if got := MedianOf([]run(nil), get); got != 0 {
		t.Errorf("MedianOf(nil) = %v, want 0", got)
	}
}

func TestMinMaxSpread(t *testing.T) {
	for _, tc := range []struct {
		name           string
		v              []float64
		lo, hi, spread float64
	}{
		{"empty", nil, 0, 0, 0},
		{"one", []float64{4}, 4, 4, 0},
		{"two", []float64{5, 2}, 2, 5, 3},
		{"many", []float64{3, -1, 7, 2}, -1, 7, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lo, hi := MinMax(tc.v)
			if lo != tc.lo || hi != tc.hi {
				t.Errorf("MinMax(%v) = %v, %v, want %v, %v", tc.v, lo, hi, tc.lo, tc.hi)
			}
			if s := Spread(tc.v); s != tc.spread {
				t.Errorf("Spread(%v) = %v, want %v", tc.v, s, tc.spread)
			}
		})
	}
}

func TestNearestRank(t *testing.T) {
	sorted := []int64{10, 20, 30, 40, 50}
	for _, tc := range []struct {
		q    float64
		want int64
	}{
		{0, 10}, {0.19, 10}, {0.2, 20}, {0.5, 30}, {0.9, 50}, {1, 50}, {1.5, 50}, {-1, 10},
	} {
		if got := NearestRank(sorted, tc.q); got != tc.want {
			t.Errorf("NearestRank(%v, %v) = %v, want %v", sorted, tc.q, got, tc.want)
		}
	}
	if got := NearestRank([]int64(nil), 0.5); got != 0 {
		t.Errorf("NearestRank(nil) = %v, want 0", got)
	}
}

func TestExceeds(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		value, limit, slack   float64
		wantOver, wantUnknown bool
	}{
		{"well-under", 2, 10, 1, false, false},
		{"over-beyond-slack", 15, 10, 2, true, false},
		{"over-within-slack", 11, 10, 2, false, false},
		{"exactly-limit-plus-slack", 12, 10, 2, false, false},
		{"no-slack", 10.5, 10, 0, true, false},
		{"negative-slack-is-zero", 10.5, 10, -3, true, false},
		{"slack-as-large-as-limit", 100, 10, 10, false, true},
		{"slack-beyond-limit", 100, 10, 50, false, true},
		{"nan-value", math.NaN(), 10, 1, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			over, unknown := Exceeds(tc.value, tc.limit, tc.slack)
			if over != tc.wantOver || unknown != tc.wantUnknown {
				t.Errorf("Exceeds(%v, %v, %v) = %v, %v, want %v, %v", tc.value, tc.limit, tc.slack, over, unknown, tc.wantOver, tc.wantUnknown)
			}
		})
	}
}

func TestFinite(t *testing.T) {
	for _, tc := range []struct {
		f    float64
		want bool
	}{{0, true}, {-3.5, true}, {math.MaxFloat64, true}, {math.NaN(), false}, {math.Inf(1), false}, {math.Inf(-1), false}} {
		if got := Finite(tc.f); got != tc.want {
			t.Errorf("Finite(%v) = %v, want %v", tc.f, got, tc.want)
		}
	}
}

func TestJudge(t *testing.T) {
	five := []float64{10, 10.1, 9.9, 10.2, 9.8}
	up := []float64{12, 12.1, 11.9, 12.2, 11.8}
	for _, tc := range []struct {
		name     string
		old, new []float64
		higher   bool
		change   Change
		test     string
	}{
		{"no runs", nil, nil, true, Unknown, ""},
		{"one run a side", []float64{10}, []float64{20, 21}, true, Unknown, ""},
		{"min-max within spread", []float64{10, 12}, []float64{11, 11.5}, true, Noise, TestMinMax},
		{"min-max beyond spread, higher better", []float64{10, 11}, []float64{13, 14}, true, Better, TestMinMax},
		{"min-max beyond spread, lower better", []float64{10, 11}, []float64{13, 14}, false, Worse, TestMinMax},
		{"min-max, change exactly the spread", []float64{10, 11}, []float64{11, 12}, true, Better, TestMinMax},
		{"min-max, no spread, no change", []float64{5, 5}, []float64{5, 5}, true, Noise, TestMinMax},
		{"mann-whitney, shifted", five, up, true, Better, TestMannWhitney},
		{"mann-whitney, shifted down", up, five, true, Worse, TestMannWhitney},
		{"mann-whitney, lower better", up, five, false, Better, TestMannWhitney},
		{"mann-whitney, same runs", five, []float64{9.8, 10.2, 10, 9.9, 10.1}, true, Noise, TestMannWhitney},
		{"4 and 5 runs: min-max", five[:4], up, true, Better, TestMinMax},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, new := slices.Clone(tc.old), slices.Clone(tc.new)
			j := Judge(old, new, tc.higher)
			if j.Change != tc.change || j.Test != tc.test {
				t.Errorf("Judge = %+v, want change %d by %q", j, tc.change, tc.test)
			}
			if j.Test == TestMannWhitney && (j.P <= 0 || j.P > 1 || (j.P < Alpha) != (tc.change != Noise)) {
				t.Errorf("p = %v with change %d", j.P, j.Change)
			}
			if j.Test == TestMinMax && j.Spread != max(Spread(tc.old), Spread(tc.new)) {
				t.Errorf("spread %v", j.Spread)
			}
			if !slices.Equal(old, tc.old) || !slices.Equal(new, tc.new) {
				t.Errorf("Judge reordered its arguments: %v %v", old, new)
			}
		})
	}
}

func TestSignTest(t *testing.T) {
	for _, tc := range []struct {
		d        []float64
		up, down int
		p        float64
	}{
		{nil, 0, 0, 1},
		{[]float64{0, math.NaN(), math.Inf(1)}, 0, 0, 1},
		{[]float64{0.1}, 1, 0, 1},
		{[]float64{0.1, 0.2, 0.3, 0.1, 0.2}, 5, 0, 2.0 / 32},
		{[]float64{0.1, 0.2, 0.3, 0.1, 0.2, 0.4}, 6, 0, 2.0 / 64},
		{[]float64{-0.1, -0.2, -0.3, -0.1, -0.2, -0.4}, 0, 6, 2.0 / 64},
		// 5 of 6 one way: P(X ≥ 5) = 7/64.
		{[]float64{0.1, 0.2, 0.3, 0.1, 0.2, -0.4}, 5, 1, 14.0 / 64},
		// An even split is as likely as can be.
		{[]float64{0.1, -0.1, 0.2, -0.2}, 2, 2, 1},
		// 9 of 10: P(X ≥ 9) = 11/1024.
		{[]float64{1, 1, 1, 1, 1, 1, 1, 1, 1, -1, 0}, 9, 1, 22.0 / 1024},
	} {
		up, down, p := SignTest(tc.d)
		if up != tc.up || down != tc.down || math.Abs(p-tc.p) > 1e-12 {
			t.Errorf("SignTest(%v) = %d, %d, %v; want %d, %d, %v", tc.d, up, down, p, tc.up, tc.down, tc.p)
		}
	}
	all := make([]float64, MinSignRuns)
	for i := range all {
		all[i] = 1
	}
	if _, _, p := SignTest(all); p >= Alpha {
		t.Errorf("%d pairs one way: p = %v, want < %v", MinSignRuns, p, Alpha)
	}
	if _, _, p := SignTest(all[1:]); p < Alpha {
		t.Errorf("%d pairs one way: p = %v, want ≥ %v (MinSignRuns is the fewest)", MinSignRuns-1, p, Alpha)
	}
}
