package fio

import (
	"errors"
	"fmt"
	"os"
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
	// Path is the file. It must exist: a twin never creates, extends,
	// truncates or removes it, and writes (write jobs only) stay within
	// its first PassBytes bytes.
	Path     string
	FileSize int64  // its size in bytes (a write job's file must be exactly this long)
	Engine   string // the iopath engine whose twin runs ("pread", ...; "pwrite", ... when Write)
	Random   bool   // every block once in a seeded random order; else sequential
	// Write makes the job write its blocks (--rw=write, --rw=randwrite
	// with Random) instead of reading them: the twin of an iopath write
	// engine (TwinWrite), over the blocks a read job would read.
	Write bool
	// Append asks for the twin of iopath's append pattern (writes past
	// the end of the file, which grows). fio has none: Args says why.
	Append     bool
	BlockSize  int // bytes per block
	Workers    int // fio jobs (processes), each on its own share
	QueueDepth int // io_uring: requests in flight per job; ignored by the others (iodepth=1)
	// Vectors is readv's (pwritev's) blocks per call. With the sequential
	// pattern and more than one, the twin is vsync, which fio makes
	// coalesce that many adjacent blocks into one readv(2) (writev(2))
	// (--iodepth=Vectors --iodepth_batch_submit=Vectors); otherwise
	// pvsync, one block per preadv(2) (pwritev(2)), as ours do for the
	// random pattern.
	Vectors int
	Direct  bool // O_DIRECT (--direct=1); iopath's sync mode direct is this with SyncNone
	SQPoll  bool // io_uring: a kernel thread polls the submission queue; ignored by the others
	// Sync is a write job's sync mode, as iopath's (engine.Sync): see
	// SyncMode for the fio options each becomes. Read jobs take SyncNone.
	Sync SyncMode
	// SyncEvery is SyncEvery's N: an fdatasync after every N blocks of
	// each job. It must be 0 with the other modes.
	SyncEvery int
	// Invalidate drops the file's pages from the cache when each fio job
	// starts (--invalidate=1), for cold runs; the caller should drop the
	// cache itself too. When false (warm, direct) fio leaves the cache
	// alone (--invalidate=0).
	Invalidate bool
	// MinTime > 0 repeats passes over the file for this long
	// (--time_based, rounded up to whole milliseconds; fio stops mid-pass
	// when it is up). 0 makes exactly one pass (cold runs). SyncEnd
	// always makes one pass: fio's end fsync comes once per run, not once
	// per pass.
	MinTime time.Duration
	Seed    uint64 // --randseed for the random pattern
	// TSCClock makes fio time each I/O with the CPU's time-stamp counter
	// (--clocksource=cpu), as iopath's engines do where the TSC is
	// invariant, instead of clock_gettime: on 4 KiB random reads from the
	// page cache fio's default clock costs it about 7% of its IOPS.
	TSCClock bool
}

// SyncMode is how a write job makes its data durable: iopath's sync
// modes (engine.SyncMode), but for direct, which is Job.Direct with
// SyncNone. The fio options each becomes are in the package
// documentation ("Writes").
type SyncMode uint8

const (
	// SyncNone makes no sync call: the data stays in the page cache.
	SyncNone SyncMode = iota
	// SyncEnd makes one fsync when each job has written its share
	// (--end_fsync=1; the mmap engine msyncs its mapping). Its time is
	// in fio's runtime, as iopath's is in its run.
	SyncEnd
	// SyncEvery makes an fdatasync after every Job.SyncEvery blocks of
	// each job (--fdatasync=N; the mmap engine msyncs its mapping).
	SyncEvery
	// SyncDSync opens the file O_DSYNC (--sync=dsync); the mmap twin,
	// whose stores no open flag reaches, msyncs after every block
	// (--fdatasync=1) instead.
	SyncDSync
)

func (m SyncMode) String() string {
	switch m {
	case SyncNone:
		return "none"
	case SyncEnd:
		return "end"
	case SyncEvery:
		return "every"
	case SyncDSync:
		return "dsync"
	}
	return "SyncMode(" + strconv.Itoa(int(m)) + ")"
}

// Share is the number of bytes each fio job reads (writes) per pass: the
// file size rounded down to a multiple of Workers*BlockSize, divided by
// Workers. It is a multiple of BlockSize, 0 when the file holds less than
// one block per worker.
func (j Job) Share() int64 {
	if j.Workers < 1 || j.BlockSize < 1 || j.FileSize < 1 {
		return 0
	}
	blocks := j.FileSize / int64(j.BlockSize) / int64(j.Workers)
	return blocks * int64(j.BlockSize)
}

// PassBytes is the number of bytes one pass of all fio jobs covers
// (Workers*Share): the first PassBytes bytes of the file. The tail beyond
// it, shorter than Workers*BlockSize, is not read (written) by fio;
// iopath's engines cover it.
func (j Job) PassBytes() int64 { return j.Share() * int64(j.Workers) }

// IOEngine is the fio ioengine that runs j: Twin(j.Engine), or
// TwinWrite(j.Engine) for a write job, except that readv reading (pwritev
// writing) several blocks per call in sequence is vsync. It is "" when
// the engine has no twin.
func (j Job) IOEngine() string {
	twin, _ := Twin(j.Engine)
	vectored := "readv"
	if j.Write {
		twin, _ = TwinWrite(j.Engine)
		vectored = "pwritev"
	}
	if twin != "" && j.Engine == vectored && !j.Random && j.Vectors > 1 {
		return "vsync"
	}
	return twin
}

// appendReason is why iopath's append pattern has no fio twin.
const appendReason = "fio cannot append as iopath does: its --file_append=1 is --offset at the file's size, " +
	"with positioned writes into a file it first lays out to the final size (fio 3.33: one fallocate of the " +
	"whole new length before the first write), not writes that grow the file; and a twin never extends the file"

// Validate reports why j cannot run, nil when it can.
func (j Job) Validate() error {
	twin := j.IOEngine()
	page := os.Getpagesize()
	switch {
	case twin == "" && j.Write:
		return fmt.Errorf("write engine %q has no fio twin", j.Engine)
	case twin == "":
		return fmt.Errorf("engine %q has no fio twin", j.Engine)
	case j.Append:
		return errors.New(appendReason)
	case j.Path == "":
		return errors.New("no file given")
	case j.BlockSize <= 0:
		return fmt.Errorf("block size %d must be positive", j.BlockSize)
	case j.Workers < 1:
		return fmt.Errorf("workers %d must be at least 1", j.Workers)
	case twin == "io_uring" && j.QueueDepth < 1:
		return fmt.Errorf("queue depth %d must be at least 1 for io_uring", j.QueueDepth)
	case j.Direct && twin == "mmap":
		return errors.New("mmap cannot read or write with O_DIRECT")
	case j.MinTime < 0:
		return fmt.Errorf("negative minimum time %v", j.MinTime)
	case j.Sync > SyncDSync:
		return fmt.Errorf("unknown sync mode %d", j.Sync)
	case !j.Write && (j.Sync != SyncNone || j.SyncEvery != 0):
		return fmt.Errorf("sync mode %v applies to write jobs only", j.Sync)
	case j.Sync == SyncEvery && j.SyncEvery < 1:
		return fmt.Errorf("sync every %d blocks: N must be at least 1", j.SyncEvery)
	case j.Sync != SyncEvery && j.SyncEvery != 0:
		return fmt.Errorf("sync mode %v takes no N (SyncEvery %d)", j.Sync, j.SyncEvery)
	case twin == "mmap" && (j.Sync == SyncEvery || j.Sync == SyncDSync) && j.BlockSize%page != 0:
		// fio's mmap engine refuses fsync/fdatasync with such blocks:
		// "mmap options dictate a minimum block size".
		return fmt.Errorf("fio's mmap engine syncs only blocks of whole pages: %d is not a multiple of %d",
			j.BlockSize, page)
	case j.Share() == 0:
		return fmt.Errorf("file of %d bytes is smaller than one %d-byte block per worker (%d workers)",
			j.FileSize, j.BlockSize, j.Workers)
	}
	return nil
}

// Args returns fio's argument list (without the binary) for j, or why j
// cannot run: no twin, the append pattern, a block size or worker count
// below 1, io_uring without a queue depth, mmap with O_DIRECT, a sync
// mode fio's engine cannot make, or a file smaller than one block per
// worker.
func (j Job) Args() ([]string, error) {
	if err := j.Validate(); err != nil {
		return nil, err
	}
	twin := j.IOEngine()
	share := j.Share()
	rw := "read"
	if j.Write {
		rw = "write"
	}
	if j.Random {
		rw = "rand" + rw
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
		a = append(a, "--iodepth="+strconv.Itoa(j.QueueDepth))
		// fio (3.33 to 3.42 at least) reuses a WRITE_FIXED's submission
		// entry for a sync without clearing its buf_index: the kernel
		// refuses the FSYNC (EINVAL) and fio ignores the failure. A twin
		// whose syncs go through the ring registers no buffers.
		if j.Sync != SyncEnd && j.Sync != SyncEvery {
			a = append(a, "--fixedbufs=1")
		}
		a = append(a, "--registerfiles=1")
		if j.SQPoll {
			a = append(a, "--sqthread_poll=1")
		}
	} else if twin == "vsync" {
		v := strconv.Itoa(j.Vectors)
		a = append(a, "--iodepth="+v, "--iodepth_batch_submit="+v)
	} else {
		a = append(a, "--iodepth=1")
	}
	switch j.Sync {
	case SyncEnd:
		a = append(a, "--end_fsync=1")
	case SyncEvery:
		n := j.SyncEvery
		if twin == "vsync" {
			// Ours counts whole calls of Vectors blocks: it syncs every
			// ceil(N/Vectors) calls. fio, given an N that is not a multiple
			// of its batch, cuts writev(2) calls short and syncs less often.
			n = (n + j.Vectors - 1) / j.Vectors * j.Vectors
		}
		a = append(a, "--fdatasync="+strconv.Itoa(n))
	case SyncDSync:
		if twin == "mmap" {
			// O_DSYNC does not reach stores into a mapping.
			a = append(a, "--fdatasync=1")
		} else {
			a = append(a, "--sync=dsync")
		}
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
	if j.MinTime > 0 && j.Sync != SyncEnd {
		ms := (j.MinTime + time.Millisecond - 1) / time.Millisecond
		a = append(a, "--time_based", "--runtime="+strconv.FormatInt(int64(ms), 10)+"ms")
	}
	if twin != "mmap" {
		// iopath's file engines give the kernel no access hint; its mmap
		// madvises the mapping, as fio's mmap engine does by default.
		a = append(a, "--fadvise_hint=0")
	}
	if j.Write {
		// fio lays out (unlinks, then recreates) a file shorter than the
		// job unless told to open it as it is; Run has checked its size.
		a = append(a, "--create_on_open=1")
	} else {
		a = append(a, "--readonly")
	}
	return append(a,
		"--allow_file_create=0",
		"--lat_percentiles=1",
		"--percentile_list="+percentileList,
		"--output-format=json",
	), nil
}
