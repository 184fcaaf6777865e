package engine_test

import (
	"context"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/iopath/iopath/engine"
	"github.com/iopath/iopath/metrics"
)

// BenchmarkEngines reads a warm 64 MiB file through every engine: one pass
// per op, sequential 128 KiB and random 4 KiB, with latency recorded (the
// p50/p99 metrics) and without (to show what recording costs). The numbers
// that matter for users come from `iopath bench`, which runs each engine in
// its own process; this keeps the engines' hot loops measurable with
// `go test -bench` and benchstat.
func BenchmarkEngines(b *testing.B) {
	const size = 64 << 20
	path := filepath.Join(b.TempDir(), "data")
	data := make([]byte, size)
	rand.Read(data)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		b.Fatal(err)
	}
	data = nil
	workloads := []struct {
		name string
		job  engine.Job
	}{
		{"seq-128k", engine.Job{Pattern: engine.Sequential, BlockSize: 128 << 10}},
		{"rand-4k", engine.Job{Pattern: engine.Random, BlockSize: 4 << 10}},
	}
	for _, name := range engine.Names() {
		e, _ := engine.Lookup(name)
		for _, wl := range workloads {
			for _, lat := range []bool{true, false} {
				sub := name + "/" + wl.name
				if !lat {
					sub += "/nolat"
				}
				b.Run(sub, func(b *testing.B) {
					job := wl.job
					job.Path, job.Latency, job.CopyMapped = path, lat, true
					p, err := e.Prepare(job)
					if errors.Is(err, engine.ErrNotSupported) {
						b.Skip(err)
					}
					if err != nil {
						b.Fatal(err)
					}
					defer p.Close()
					sink := engine.SinkFunc(func(int, int64, []byte) error { return nil })
					if _, err := p.Run(context.Background(), sink); err != nil { // warm the cache
						b.Fatal(err)
					}
					h := metrics.NewHistogram()
					var syscalls, blocks int64
					b.SetBytes(size)
					b.ReportAllocs()
					b.ResetTimer()
					for b.Loop() {
						st, err := p.Run(context.Background(), sink)
						if err != nil {
							b.Fatal(err)
						}
						t := st.Total()
						syscalls += t.Syscalls
						blocks += t.Blocks
						h.Merge(t.Lat)
					}
					b.StopTimer()
					if blocks > 0 {
						b.ReportMetric(float64(syscalls)/float64(blocks), "syscalls/block")
					}
					if h.Count() > 0 {
						b.ReportMetric(float64(h.Quantile(50)), "p50-ns")
						b.ReportMetric(float64(h.Quantile(99)), "p99-ns")
					}
				})
			}
		}
	}
}
