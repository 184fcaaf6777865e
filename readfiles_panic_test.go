package iopath

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/iopath/iopath/internal/testenv"
	"go.uber.org/goleak"
)

// readFilesPanic is what the test fns of ReadFiles panic with.
type readFilesPanic struct{ n int64 }

// A panic in ReadFiles' fn, which runs on the engine's worker goroutines,
// reaches ReadFiles' caller, with fn's value, after every worker has
// ended, every io_uring request has been reaped and every descriptor is
// closed: recover in the caller catches it, and nothing leaks (no
// goroutine, no descriptor, no buffer left pinned for the runtime.Pinner
// leak check to find).
func TestReadFilesPanicInFn(t *testing.T) {
	defer goleak.VerifyNone(t)
	testenv.CheckFDs(t)
	dir := t.TempDir()
	for i := range 300 {
		// Some larger than a first read's buffer, so that io_uring has
		// follow-up reads (into pinned buffers) in flight.
		size := 3000
		if i%7 == 0 {
			size = 300 << 10
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d", i)), content(size, uint64(i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range []string{"", "readfile", "pool", "raw", "io_uring"} {
		for _, workers := range []int{1, 3} {
			name := e
			if name == "" {
				name = "auto"
			}
			t.Run(fmt.Sprintf("%s/workers=%d", name, workers), func(t *testing.T) {
				opts := []Option{WithWorkers(workers)}
				if e != "" {
					opts = append(opts, WithEngine(e))
				}
				const at = 10
				var calls atomic.Int64
				var got any
				var err error
				func() {
					defer func() { got = recover() }()
					err = ReadFiles(context.Background(), []string{dir}, func(string, []byte, error) error {
						if n := calls.Add(1); n == at {
							panic(readFilesPanic{n})
						}
						return nil
					}, opts...)
				}()
				skipUnsupported(t, err)
				if got != (readFilesPanic{at}) {
					t.Fatalf("recovered %v (ReadFiles returned %v), want fn's panic", got, err)
				}
				collect(t)
			})
		}
	}
}
