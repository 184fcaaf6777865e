package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/iopath/iopath/perf/perftest"

	"github.com/iopath/iopath/engine"
	"github.com/iopath/iopath/internal/stats"
	"github.com/iopath/iopath/perf"
)

// BenchmarkPerfOverhead measures what --perf costs the engines, in one
// run: each iteration makes, for every engine, one run without perf and
// one recorded at perf.DefaultFreq (the order alternating from iteration
// to iteration), of a warm 256 MiB file; it reports each engine's median
// GiB/s recorded divided by its median without (1.00: no cost).
// IOPATH_PERF_FREQ sets another frequency (4000: perf's own default).
//
//	go test -run '^$' -bench PerfOverhead -benchtime 8x ./bench
func BenchmarkPerfOverhead(b *testing.B) {
	perftest.Need(b)
	freq := perf.DefaultFreq
	if v := os.Getenv("IOPATH_PERF_FREQ"); v != "" {
		if _, err := fmt.Sscan(v, &freq); err != nil || freq < 1 {
			b.Fatalf("IOPATH_PERF_FREQ=%q: want a frequency in Hz", v)
		}
	}
	path := testFile(b, 256<<20)
	minTime := time.Second
	if b.N == 1 {
		minTime = 200 * time.Millisecond // CI's one iteration: that it runs
	}
	argv := []string{os.Args[0]}
	ctx := context.Background()
	var engines []string
	for _, e := range DefaultEngines() {
		// The engines bench compares by default, not those this test
		// binary registers (test-...).
		if eng, _ := engine.Lookup(e); eng != nil && !eng.Caps().NoData && !strings.HasPrefix(e, "test-") {
			engines = append(engines, e)
		}
	}
	off, on := map[string][]float64{}, map[string][]float64{}
	run := func(e string, record bool) {
		cr := childRequest{Engine: e, Job: engine.Job{Path: path}.WithDefaults(), Consume: Checksum, MinTimeNs: int64(minTime)}
		var rec *perf.Recording
		var wrap func(*exec.Cmd) error
		if record {
			wrap = func(cmd *exec.Cmd) error {
				var err error
				rec, err = perf.Wrap(cmd, perf.Options{Freq: freq})
				return err
			}
		}
		r, _, _, notSupported := runChild(ctx, argv, &cr, wrap)
		if rec != nil {
			rec.Close()
		}
		switch {
		case notSupported:
			engines = slices.DeleteFunc(engines, func(x string) bool { return x == e })
		case r.Error != "":
			b.Fatalf("%s: %s", e, r.Error)
		case record:
			on[e] = append(on[e], r.BytesPerS)
		default:
			off[e] = append(off[e], r.BytesPerS)
		}
	}
	for _, e := range engines {
		run(e, false) // warms the file
	}
	clear(off)
	b.ResetTimer()
	for i := range b.N {
		for _, e := range slices.Clone(engines) {
			run(e, i%2 == 1)
			run(e, i%2 == 0)
		}
	}
	b.StopTimer()
	for _, e := range engines {
		if len(on[e]) > 0 && len(off[e]) > 0 {
			b.ReportMetric(stats.Median(on[e])/stats.Median(off[e]), e+"-ratio")
		}
	}
}
