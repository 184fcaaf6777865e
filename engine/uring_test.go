package engine_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/iopath/iopath/engine"
	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/testenv"
)

func requireIOURing(t *testing.T) {
	t.Helper()
	if u := features.Probe().IOURing; !u.Available {
		t.Skipf("io_uring not supported: %s", u.Reason)
	}
}

// diskDir is a directory on a filesystem that accepts O_DIRECT.
func diskDir(t *testing.T) string {
	dir := t.TempDir()
	if features.DescribeMachine(dir, "").Filesystem != "tmpfs" {
		return dir
	}
	dir, err := os.MkdirTemp("/var/tmp", "iopath-uring-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func writeTestFile(t *testing.T, dir string, size int) (string, []byte) {
	data := make([]byte, size)
	x := uint64(size) + 1
	for i := range data {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		data[i] = byte(x)
	}
	path := filepath.Join(dir, fmt.Sprintf("f%d", size))
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, data
}

func TestUringMatchesFile(t *testing.T) {
	requireIOURing(t)
	e, err := engine.Lookup("io_uring")
	if err != nil {
		t.Fatal(err)
	}
	dir := diskDir(t)
	before := testenv.OpenFDs(t)
	for _, size := range []int{0, 1, 4095, 4097, 1<<20 + 1} {
		path, data := writeTestFile(t, dir, size)
		for _, bs := range []int{4 << 10, 128 << 10} {
			for _, qd := range []int{1, 32} {
				for _, workers := range []int{1, 2} {
					for _, pat := range []engine.Pattern{engine.Sequential, engine.Random} {
						for _, direct := range []bool{false, true} {
							name := fmt.Sprintf("size=%d/bs=%d/qd=%d/w=%d/%v/direct=%v", size, bs, qd, workers, pat, direct)
							t.Run(name, func(t *testing.T) {
								job := engine.Job{Path: path, BlockSize: bs, QueueDepth: qd, Workers: workers,
									Pattern: pat, Direct: direct, Latency: qd == 32}
								checkUring(t, e, job, data)
							})
						}
					}
				}
			}
		}
	}
	if after := testenv.OpenFDs(t); after != before {
		t.Errorf("fd count %d before, %d after", before, after)
	}
}

func checkUring(t *testing.T, e engine.Engine, job engine.Job, data []byte) {
	t.Helper()
	p, err := e.Prepare(job)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for run := 0; run < 2; run++ { // a Prepared runs more than once
		got := make([]byte, len(data))
		var delivered atomic.Int64
		st, err := p.Run(context.Background(), engine.SinkFunc(func(w int, off int64, b []byte) error {
			if off%int64(job.BlockSize) != 0 || len(b) > job.BlockSize {
				return fmt.Errorf("block at %d of %d bytes", off, len(b))
			}
			copy(got[off:], b)
			delivered.Add(int64(len(b)))
			return nil
		}))
		if err != nil {
			t.Fatal(err)
		}
		if delivered.Load() != int64(len(data)) || !bytes.Equal(got, data) {
			t.Fatalf("run %d: %d bytes delivered, want %d; equal %v", run, delivered.Load(), len(data), bytes.Equal(got, data))
		}
		tot := st.Total()
		if tot.Bytes != int64(len(data)) || tot.Syscalls < 1 {
			t.Errorf("stats %+v", tot)
		}
		if job.Latency && len(data) > 0 && tot.Lat.Count() != tot.Blocks {
			t.Errorf("%d latencies for %d blocks", tot.Lat.Count(), tot.Blocks)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestUringSinkErrorAndCancel(t *testing.T) {
	requireIOURing(t)
	e, _ := engine.Lookup("io_uring")
	path, _ := writeTestFile(t, t.TempDir(), 4<<20)
	p, err := e.Prepare(engine.Job{Path: path, BlockSize: 4096, QueueDepth: 32, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	boom := errors.New("boom")
	var n atomic.Int64
	_, err = p.Run(context.Background(), engine.SinkFunc(func(w int, off int64, b []byte) error {
		if n.Add(1) == 10 {
			return boom
		}
		return nil
	}))
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the sink's error", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n.Store(0)
	_, err = p.Run(ctx, engine.SinkFunc(func(w int, off int64, b []byte) error {
		if n.Add(1) == 10 {
			cancel()
		}
		return nil
	}))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	// The engine still works after both.
	_, err = p.Run(context.Background(), engine.SinkFunc(func(int, int64, []byte) error { return nil }))
	if err != nil {
		t.Fatal(err)
	}
}

func TestUringSQPoll(t *testing.T) {
	requireIOURing(t)
	if !features.Probe().FlagSupported("SQPOLL") {
		t.Skip("SQPOLL not supported by this kernel")
	}
	e, _ := engine.Lookup("io_uring")
	path, data := writeTestFile(t, t.TempDir(), 1<<20+7)
	checkUring(t, e, engine.Job{Path: path, BlockSize: 64 << 10, QueueDepth: 8, SQPoll: true}, data)
}

func TestUringDisabledByEnv(t *testing.T) {
	t.Setenv("IOPATH_DISABLE_IO_URING", "1")
	e, _ := engine.Lookup("io_uring")
	_, err := e.Prepare(engine.Job{Path: "/dev/null"})
	if !errors.Is(err, engine.ErrNotSupported) {
		t.Fatalf("err = %v, want ErrNotSupported", err)
	}
	var nse *engine.NotSupportedError
	if !errors.As(err, &nse) || nse.Reason != "disabled by IOPATH_DISABLE_IO_URING=1" {
		t.Errorf("err = %v", err)
	}
}
