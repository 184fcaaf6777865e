package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/metrics"
)

// SyncMode is a write job's durability discipline: when written data is
// made to survive a power cut.
type SyncMode uint8

const (
	// SyncNone leaves the data in the page cache: the kernel writes it
	// back when it likes (dirty_expire_centisecs, 30 s by default), and
	// a power cut before then loses it.
	SyncNone SyncMode = iota
	// SyncEnd makes one fsync(2) when the run has written everything,
	// inside the measured phase: the whole run survives a power cut once
	// Run has returned.
	SyncEnd
	// SyncEvery makes an fdatasync(2) after every Sync.Every blocks of
	// each worker (io_uring: an FSYNC request with IORING_FSYNC_DATASYNC
	// that starts once every earlier write of the worker has completed;
	// mmap: msync of those blocks). The last fewer than Every blocks of a
	// worker are not synced (fio's --fdatasync=N also skips the sync
	// after a worker's last write, even after a whole group).
	SyncEvery
	// SyncDSync opens the file O_DSYNC: every write returns once its data
	// (and the metadata needed to read it) is on stable storage. mmap has
	// no write call: it msyncs every block instead.
	SyncDSync
	// SyncDirect opens the file O_DIRECT (Job.Direct) and makes no sync
	// call: the data goes to the device without the page cache, but may
	// wait in the device's volatile write cache, so it is not promised to
	// survive a power cut on a device that has one.
	SyncDirect
)

// Sync is a SyncMode with its parameter.
type Sync struct {
	Mode  SyncMode `json:"mode"`
	Every int      `json:"every,omitempty"` // SyncEvery's N
}

// MaxSyncEvery bounds Sync.Every.
const MaxSyncEvery = 1 << 30

// ParseSync accepts none, end, every:N (N ≥ 1), dsync and direct.
func ParseSync(s string) (Sync, error) {
	w := strings.ToLower(strings.TrimSpace(s))
	switch w {
	case "none", "":
		return Sync{}, nil
	case "end":
		return Sync{Mode: SyncEnd}, nil
	case "dsync":
		return Sync{Mode: SyncDSync}, nil
	case "direct":
		return Sync{Mode: SyncDirect}, nil
	}
	if n, ok := strings.CutPrefix(w, "every:"); ok {
		v, err := strconv.Atoi(n)
		if err != nil || v < 1 || v > MaxSyncEvery {
			return Sync{}, fmt.Errorf("sync %q: N must be a whole number in [1, %d]", s, MaxSyncEvery)
		}
		return Sync{Mode: SyncEvery, Every: v}, nil
	}
	return Sync{}, fmt.Errorf("unknown sync mode %q (want none, end, every:N, dsync or direct)", s)
}

func (s Sync) String() string {
	switch s.Mode {
	case SyncNone:
		return "none"
	case SyncEnd:
		return "end"
	case SyncEvery:
		return fmt.Sprintf("every:%d", s.Every)
	case SyncDSync:
		return "dsync"
	case SyncDirect:
		return "direct"
	}
	return fmt.Sprintf("SyncMode(%d)", s.Mode)
}

// Promise says, in one sentence, after which call the data of a run in
// mode s survives a power cut (on a filesystem that honours fsync, such
// as ext4, XFS or Btrfs, and a device that honours flushes).
func (s Sync) Promise() string {
	switch s.Mode {
	case SyncNone:
		return "none: the data is in the page cache only; a power cut loses whatever the kernel has not written back yet (up to dirty_expire_centisecs, 30 s by default)"
	case SyncEnd:
		return "end: the whole run survives a power cut once its one fsync at the end has returned; before that, any of it may be lost"
	case SyncEvery:
		return fmt.Sprintf("every:%d: each worker's blocks survive once the fdatasync after each %d of them has returned; the last fewer than %d blocks of a worker are not synced", s.Every, s.Every, s.Every)
	case SyncDSync:
		return "dsync: each block survives a power cut once its write has returned (O_DSYNC; mmap: once its msync has returned)"
	case SyncDirect:
		return "direct: each write bypasses the page cache (O_DIRECT) and reaches the device when it returns, but may sit in the device's volatile write cache: without a sync nothing is promised across a power cut"
	}
	return ""
}

func (s Sync) validate() error {
	switch {
	case s.Mode > SyncDirect:
		return fmt.Errorf("unknown sync mode %d", s.Mode)
	case s.Mode == SyncEvery && (s.Every < 1 || s.Every > MaxSyncEvery):
		return fmt.Errorf("sync every:%d: N out of range [1, %d]", s.Every, MaxSyncEvery)
	case s.Mode != SyncEvery && s.Every != 0:
		return fmt.Errorf("sync %v takes no N", s)
	}
	return nil
}

// Source makes the bytes a write job writes.
//
// Prime is called at the start of every Run for each buffer the engine
// writes from (its whole capacity), from one goroutine before any Fill.
// Fill is then called from worker w's goroutine with one of those
// buffers, b[:n] of the block at file offset off, before that block is
// written; b holds what the last Prime or Fill of that buffer left in
// it, so that a Source may make a block by changing a few bytes of a
// primed buffer, as fio scrambles its buffers. A non-nil error stops the
// run and is returned by Run; a panic is carried to Run's caller as a
// Sink's is.
type Source interface {
	Prime(b []byte)
	Fill(w int, off int64, b []byte) error
}

// Writer is one write path: a system call family that writes a file's
// blocks, with the block plan, workers, latency histograms and counters
// of the read engines.
type Writer interface {
	// Name is the writer's registered name ("write", "pwrite", ...).
	Name() string
	// Caps reports what the writer supports (Caps.Direct: O_DIRECT).
	Caps() Caps
	// PrepareWrite validates job and does the one-time setup that is not
	// part of the measured phase. A writer that cannot run here, or
	// cannot run job (the append pattern with several write(2) workers,
	// O_DIRECT with mmap), returns an error wrapping ErrNotSupported with
	// the reason.
	PrepareWrite(job Job) (PreparedWrite, error)
}

// PreparedWrite is a writer set up for one Job.
type PreparedWrite interface {
	// Run opens the job's file, which must exist and be a regular file
	// (a writer never creates, truncates or removes a file), writes
	// every block of the plan with bytes from src, makes the syncs the
	// job's Sync mode asks for, and closes the file. It may be called
	// again after it returns. Cancelling ctx stops the workers promptly;
	// Run then returns ctx.Err(). Errors name the path (a full disk is
	// an *fs.PathError wrapping ENOSPC).
	Run(ctx context.Context, src Source) (*Stats, error)
	// Close releases what PrepareWrite set up. It is safe to call more
	// than once.
	Close() error
}

var writers = map[string]Writer{}

// writerOrder is the canonical order of writers in tables.
var writerOrder = []string{"write", "pwrite", "pwritev", "mmap", "io_uring"}

// RegisterWriter adds a writer to the registry, for tests and
// experiments. It panics on a duplicate name.
func RegisterWriter(w Writer) { registerWriter(w) }

func registerWriter(w Writer) {
	if _, dup := writers[w.Name()]; dup {
		panic("engine: duplicate registration of writer " + w.Name())
	}
	writers[w.Name()] = w
}

// LookupWriter returns the writer called name.
func LookupWriter(name string) (Writer, error) {
	w, ok := writers[name]
	if !ok {
		return nil, fmt.Errorf("unknown write engine %q (have %s)", name, strings.Join(WriterNames(), ", "))
	}
	return w, nil
}

// WriterNames lists the registered writers in table order.
func WriterNames() []string {
	var names, rest []string
	for _, n := range writerOrder {
		if _, ok := writers[n]; ok {
			names = append(names, n)
		}
	}
	for n := range writers {
		if !slices.Contains(writerOrder, n) {
			rest = append(rest, n)
		}
	}
	sort.Strings(rest)
	return append(names, rest...)
}

// prepareWriteJob is the start of every writer's PrepareWrite: defaults,
// validation and the latency clock's calibration.
func prepareWriteJob(job Job) (Job, error) {
	job = job.WithDefaults()
	if err := job.Validate(); err != nil {
		return job, err
	}
	if job.Latency {
		metrics.InitClock()
	}
	return job, nil
}

// wfile is the open file of a write run.
type wfile struct {
	file
	flags int
	// total is the bytes the run writes; base is where they start (the
	// size at open for the append pattern, else 0).
	total, base int64
}

// openWriteFile opens job.Path for writing with flags (plus O_DIRECT
// and O_DSYNC as the job says) and checks that it is a regular file with
// something to write. It never creates or truncates it.
func openWriteFile(job *Job, flags int) (*wfile, error) {
	flags |= sys.O_NONBLOCK
	if job.Direct {
		flags |= sys.O_DIRECT
	}
	if job.Sync.Mode == SyncDSync && flags&sys.O_RDWR == 0 {
		flags |= sys.O_DSYNC
	}
	fd, err := sys.Open(job.Path, flags)
	if sys.Unopenable(job.Path, err) {
		return nil, &fs.PathError{Op: "write", Path: job.Path, Err: ErrNotRegular}
	}
	if err != nil {
		var pe *fs.PathError
		if job.Direct && errors.As(err, &pe) && pe.Err == sys.EINVAL {
			return nil, &fs.PathError{Op: "open", Path: job.Path,
				Err: &NotSupportedError{What: "O_DIRECT", Reason: "the filesystem refuses it (use a file on a disk)"}}
		}
		return nil, err
	}
	f := &wfile{file: file{fd: fd, path: job.Path}, flags: flags &^ sys.O_NONBLOCK}
	var st sys.Stat_t
	if err := sys.Fstat(fd, &st); err != nil {
		f.close()
		return nil, &fs.PathError{Op: "stat", Path: job.Path, Err: err}
	}
	switch st.Mode & sys.S_IFMT {
	case sys.S_IFREG:
	case sys.S_IFDIR:
		f.close()
		return nil, &fs.PathError{Op: "write", Path: job.Path, Err: sys.EISDIR}
	default:
		f.close()
		return nil, &fs.PathError{Op: "write", Path: job.Path, Err: ErrNotRegular}
	}
	if err := sys.ClearNonblock(fd); err != nil {
		f.close()
		return nil, &fs.PathError{Op: "fcntl", Path: job.Path, Err: err}
	}
	f.size, f.dev, f.ino = st.Size, st.Dev, st.Ino
	f.total = job.Size
	if job.Pattern == Append {
		f.base = st.Size
	} else if f.total == 0 {
		f.total = st.Size
	}
	if f.total == 0 {
		f.close()
		return nil, &fs.PathError{Op: "write", Path: job.Path, Err: errors.New("nothing to write: the file is empty and the job gives no size")}
	}
	if job.Direct && (f.total%directAlign != 0 || f.base%directAlign != 0) {
		f.close()
		return nil, &fs.PathError{Op: "write", Path: job.Path, Err: fmt.Errorf(
			"O_DIRECT writes whole %d-byte blocks at aligned offsets: the size to write (%d) and the offset it starts at (%d) must be multiples of %d",
			directAlign, f.total, f.base, directAlign)}
	}
	return f, nil
}

// plan returns the run's block plan.
func (f *wfile) plan(job *Job) plan {
	if job.Pattern == Append {
		return appendPlan(job, f.base, f.total)
	}
	return newPlan(job, f.total)
}

// writeErr wraps a write error with the path and offset.
func (f *wfile) writeErr(off int64, err error) error {
	return &fs.PathError{Op: "write", Path: f.path, Err: fmt.Errorf("at offset %d: %w", off, err)}
}

// syncErr wraps a sync error with the path.
func (f *wfile) syncErr(op string, err error) error {
	return &fs.PathError{Op: op, Path: f.path, Err: err}
}

// errShortWrite is a write that wrote nothing and reported no error.
var errShortWrite = errors.New("the write wrote 0 bytes")

// writeFile is the measured phase the synchronous writers share: open
// the job's file with flags, plan its blocks, prime every buffer with
// src, run worker once per worker (each in its own goroutine), make the
// end sync (SyncEnd: one fsync, counted in worker 0's stats) and close
// the file. before, when set, runs after the open and before the
// workers (mmap grows the file there). The stats are returned also on
// error; a panic in src is raised again last.
func writeFile(ctx context.Context, job *Job, flags int, src Source, bufs *arena, before func(f *wfile, ws *WorkerStats) error, worker func(ctx context.Context, f *wfile, p *plan, w int, ws *WorkerStats) error) (*Stats, error) {
	f, err := openWriteFile(job, flags)
	if err != nil {
		return nil, err
	}
	defer f.close()
	if bufs != nil {
		for i := range bufs.count() {
			b := bufs.buf(i)
			src.Prime(b[:cap(b)])
		}
	}
	p := f.plan(job)
	st := newWriteStats(job)
	if before != nil {
		if err := before(f, &st.Workers[0]); err != nil {
			return st, err
		}
	}
	c := begin(ctx, nil)
	err = runWorkers(c, job.Workers, func(ctx context.Context, w int) error {
		return worker(ctx, f, &p, w, &st.Workers[w])
	})
	if err == nil && job.Sync.Mode == SyncEnd {
		err = f.endSync(&st.Workers[0])
	}
	c.end()
	if cerr := f.close(); err == nil {
		err = cerr
	}
	c.pan.Raise()
	return st, err
}

// endSync is SyncEnd's fsync, timed and counted in ws.
func (f *wfile) endSync(ws *WorkerStats) error {
	var t0 int64
	if ws.SyncLat != nil {
		t0 = metrics.Ticks()
	}
	ws.Syscalls++
	ws.Syncs++
	if err := sys.Fsync(f.fd); err != nil {
		return f.syncErr("fsync", err)
	}
	if ws.SyncLat != nil {
		ws.SyncLat.RecordTicks(metrics.Ticks() - t0)
	}
	return nil
}

// newWriteStats is newStats with the sync histograms.
func newWriteStats(job *Job) *Stats {
	s := newStats(job)
	if job.Latency {
		for i := range s.Workers {
			s.Workers[i].SyncLat = metrics.NewHistogram()
		}
	}
	return s
}

// syncer makes SyncEvery's fdatasync after every n blocks of one worker
// of a synchronous writer.
type syncer struct {
	every, since int
}

func newSyncer(job *Job) syncer {
	if job.Sync.Mode != SyncEvery {
		return syncer{}
	}
	return syncer{every: job.Sync.Every}
}

// wrote counts m blocks written and makes the fdatasync when their turn
// has come, timed and counted in ws.
func (s *syncer) wrote(f *wfile, m int, ws *WorkerStats) error {
	if s.every == 0 {
		return nil
	}
	s.since += m
	if s.since < s.every {
		return nil
	}
	s.since = 0
	var t0 int64
	if ws.SyncLat != nil {
		t0 = metrics.Ticks()
	}
	ws.Syscalls++
	ws.Syncs++
	if err := sys.Fdatasync(f.fd); err != nil {
		return f.syncErr("fdatasync", err)
	}
	if ws.SyncLat != nil {
		ws.SyncLat.RecordTicks(metrics.Ticks() - t0)
	}
	return nil
}

// pwriteFull writes b (rounded up for O_DIRECT: len(b) is already a
// multiple of the alignment then) at off, looping over short writes, and
// returns the calls made. off < 0 writes at the file position (write(2)).
func pwriteFull(f *wfile, b []byte, off int64) (int64, error) {
	var calls int64
	done := 0
	for done < len(b) {
		calls++
		var n int
		var err error
		if off < 0 {
			n, err = sys.Write(f.fd, b[done:])
		} else {
			n, err = sys.Pwrite(f.fd, b[done:], off+int64(done))
		}
		if err != nil {
			return calls, f.writeErr(max(off, 0)+int64(done), err)
		}
		if n == 0 {
			return calls, f.writeErr(max(off, 0)+int64(done), errShortWrite)
		}
		done += n
	}
	return calls, nil
}
