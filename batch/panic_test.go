package batch

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// fnPanic is the value the tests' Func panics with.
type fnPanic struct{ n int64 }

// TestFuncPanics: a Func that panics on a worker's goroutine must not kill
// the process: the panic stops the run, every worker ends, every request
// is reaped and every descriptor closed, and the same value is panicked
// again in the goroutine that called Read, where recover catches it.
func TestFuncPanics(t *testing.T) {
	dir, paths := manyFiles(t, 600, 3000)
	plain, _ := archivePack(t, dir, "t.tar", PackOptions{})
	zst, _ := archivePack(t, dir, "t.tar.zst", PackOptions{Zstd: true})
	type run struct {
		name string
		e    Engine
		job  Job
	}
	var runs []run
	for _, e := range testEngines(t) {
		for _, workers := range []int{1, 4} {
			for _, in := range []struct {
				name  string
				paths []string
			}{{"files", paths}, {"dir", []string{dir}}} {
				runs = append(runs, run{fmt.Sprintf("%s/%s/workers=%d", e.Name(), in.name, workers), e, Job{Paths: in.paths, Workers: workers}})
			}
		}
	}
	archive, err := Lookup("archive")
	if err != nil {
		t.Fatal(err)
	}
	runs = append(runs,
		run{"archive/tar", archive, Job{Archive: plain}},
		run{"archive/zstd/workers=4", archive, Job{Archive: zst, Workers: 4}})
	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			warm(t)
			noLeaks(t)
			const at = 10
			var calls, late atomic.Int64
			var got any
			var err error
			func() {
				defer func() { got = recover() }()
				_, err = Read(context.Background(), r.e, r.job, func(f *File) error {
					n := calls.Add(1)
					if n > at {
						late.Add(1)
					}
					if n == at {
						panic(fnPanic{n})
					}
					// A slow Func leaves the CPUs to the worker that
					// panicked (see TestStops).
					time.Sleep(200 * time.Microsecond)
					return nil
				})
			}()
			skipUnsupported(t, r.e, err)
			if got != (fnPanic{at}) {
				t.Fatalf("recovered %v (Read returned %v), want the Func's panic %v", got, err, fnPanic{at})
			}
			if n := late.Load(); n > inFlight(r.e, r.job.Workers)+8 {
				t.Errorf("Func called %d times after it panicked", n)
			}
		})
	}
}
