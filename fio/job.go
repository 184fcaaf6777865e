package fio

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Percentiles are the total-latency percentiles asked of fio, in the order
// of Result's LatP50Ns ... LatP9999Ns.
var Percentiles = []float64{50, 90, 99, 99.9, 99.99}

const percentileList = "50:90:99:99.9:99.99"

// Job is one fio run mirroring one iopath run. Its fields mean what
// engine.Job's do; Workers, BlockSize and (for io_uring) QueueDepth must
// be set, as engine.Job.WithDefaults would set them.
type Job struct {
	Path       string // the file to read; never written, never created
	FileSize   int64  // its size in bytes
	Engine     string // the iopath engine whose twin runs ("pread", ...)
	Random     bool   // every block once in a seeded random order; else sequential
	BlockSize  int    // bytes per block
	Workers    int    // fio jobs (processes), each reading its own share
	QueueDepth int    // io_uring: requests in flight per job; ignored by the others (iodepth=1)
	// Vectors is readv's blocks per call. With the sequential pattern and
	// more than one, readv's twin is vsync, which fio makes coalesce that
	// many adjacent blocks into one readv(2) (--iodepth=Vectors
	// --iodepth_batch_submit=Vectors); otherwise pvsync, one block per
	// preadv(2), as our readv does for the random pattern.
	Vectors int
	Direct  bool // O_DIRECT (--direct=1)
	SQPoll  bool // io_uring: a kernel thread polls the submission queue; ignored by the others
	// Invalidate drops the file's pages from the cache when each fio job
	// starts (--invalidate=1), for cold runs; the caller should drop the
	// cache itself too. When false (warm, direct) fio leaves the cache
	// alone (--invalidate=0).
	Invalidate bool
	// MinTime > 0 repeats passes over the file for this long
	// (--time_based, rounded up to whole milliseconds; fio stops mid-pass
	// when it is up). 0 makes exactly one pass (cold runs).
	MinTime time.Duration
	Seed    uint64 // --randseed for the random pattern
	// TSCClock makes fio time each I/O with the CPU's time-stamp counter
	// (--clocksource=cpu), as iopath's engines do where the TSC is
	// invariant, instead of clock_gettime: on 4 KiB random reads from the
	// page cache fio's default clock costs it about 7% of its IOPS.
	TSCClock bool
}

// Share is the number of bytes each fio job reads per pass: the file size
// rounded down to a multiple of Workers*BlockSize, divided by Workers. It
// is a multiple of BlockSize, 0 when the file holds less than one block per
// worker.
func (j Job) Share() int64 {
	if j.Workers < 1 || j.BlockSize < 1 || j.FileSize < 1 {
		return 0
	}
	blocks := j.FileSize / int64(j.BlockSize) / int64(j.Workers)
	return blocks * int64(j.BlockSize)
}

// PassBytes is the number of bytes one pass of all fio jobs covers
// (Workers*Share): the first PassBytes bytes of the file. The tail beyond
// it, shorter than Workers*BlockSize, is not read by fio; iopath reads it.
func (j Job) PassBytes() int64 { return j.Share() * int64(j.Workers) }

// IOEngine is the fio ioengine that runs j: Twin(j.Engine), except that
// readv reading several blocks per call in sequence is vsync.
func (j Job) IOEngine() string {
	twin, _ := Twin(j.Engine)
	if j.Engine == "readv" && !j.Random && j.Vectors > 1 {
		return "vsync"
	}
	return twin
}

// Validate reports why j cannot run, nil when it can.
func (j Job) Validate() error {
	_, ok := Twin(j.Engine)
	twin := j.IOEngine()
	switch {
	case !ok:
		return fmt.Errorf("engine %q has no fio twin", j.Engine)
	case j.Path == "":
		return errors.New("no file given")
	case j.BlockSize <= 0:
		return fmt.Errorf("block size %d must be positive", j.BlockSize)
	case j.Workers < 1:
		return fmt.Errorf("workers %d must be at least 1", j.Workers)
	case twin == "io_uring" && j.QueueDepth < 1:
		return fmt.Errorf("queue depth %d must be at least 1 for io_uring", j.QueueDepth)
	case j.Direct && twin == "mmap":
		return errors.New("mmap cannot read with O_DIRECT")
	case j.MinTime < 0:
		return fmt.Errorf("negative minimum time %v", j.MinTime)
	case j.Share() == 0:
		return fmt.Errorf("file of %d bytes is smaller than one %d-byte block per worker (%d workers)",
			j.FileSize, j.BlockSize, j.Workers)
	}
	return nil
}

// Args returns fio's argument list (without the binary) for j, or why j
// cannot run: no twin, a block size or worker count below 1, io_uring
// without a queue depth, mmap with O_DIRECT, or a file smaller than one
// block per worker.
func (j Job) Args() ([]string, error) {
	if err := j.Validate(); err != nil {
		return nil, err
	}
	twin := j.IOEngine()
	share := j.Share()
	rw := "read"
	if j.Random {
		rw = "randread"
	}
	a := []string{
		"--name=" + twin,
		"--filename=" + j.Path,
		"--ioengine=" + twin,
		"--rw=" + rw,
		"--bs=" + strconv.Itoa(j.BlockSize),
		"--size=" + strconv.FormatInt(share, 10),
		"--numjobs=" + strconv.Itoa(j.Workers),
	}
	if j.Workers > 1 {
		a = append(a, "--offset_increment="+strconv.FormatInt(share, 10))
	}
	a = append(a, "--group_reporting")
	if twin == "io_uring" {
		a = append(a, "--iodepth="+strconv.Itoa(j.QueueDepth), "--fixedbufs=1", "--registerfiles=1")
		if j.SQPoll {
			a = append(a, "--sqthread_poll=1")
		}
	} else if twin == "vsync" {
		v := strconv.Itoa(j.Vectors)
		a = append(a, "--iodepth="+v, "--iodepth_batch_submit="+v)
	} else {
		a = append(a, "--iodepth=1")
	}
	if j.Random {
		a = append(a, "--randseed="+strconv.FormatUint(j.Seed, 10))
	}
	if j.Invalidate {
		a = append(a, "--invalidate=1")
	} else {
		a = append(a, "--invalidate=0")
	}
	if j.Direct {
		a = append(a, "--direct=1")
	}
	if j.TSCClock {
		a = append(a, "--clocksource=cpu")
	}
	if j.MinTime > 0 {
		ms := (j.MinTime + time.Millisecond - 1) / time.Millisecond
		a = append(a, "--time_based", "--runtime="+strconv.FormatInt(int64(ms), 10)+"ms")
	}
	if twin != "mmap" {
		// iopath's file engines give the kernel no access hint; its mmap
		// madvises the mapping, as fio's mmap engine does by default.
		a = append(a, "--fadvise_hint=0")
	}
	return append(a,
		"--readonly",
		"--allow_file_create=0",
		"--lat_percentiles=1",
		"--percentile_list="+percentileList,
		"--output-format=json",
	), nil
}
