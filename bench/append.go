package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/iopath/iopath"
	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/stats"
	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/internal/units"
	"github.com/iopath/iopath/metrics"
)

// Durable appends: `iopath bench --append` appends records of one size
// from N goroutines for a fixed time by each method below, side by
// side, and reports the durable records per second, the latency of one
// append, the sync calls and the CPU per record. Each run is a child
// process appending to a new, empty file; when its time is up the child
// closes the file, drops its pages from the page cache and reads every
// record back: a record acknowledged but not found, or found damaged,
// fails the run.

// Append methods: the Engine of an append row. The names are stable
// (they are the rows' identity in JSON and in compare).
const (
	// AppendFileFsync is what most Go code does: os.File.Write of the
	// record to a file opened with O_APPEND, then f.Sync (fsync(2)),
	// under a mutex, for every record.
	AppendFileFsync = "file+fsync"
	// AppendFileFdatasync is AppendFileFsync with fdatasync(2), which
	// skips the inode's timestamps (not its size).
	AppendFileFdatasync = "file+fdatasync"
	// AppendLogPwrite is iopath.Log with WithEngine("pwrite"): group
	// commit, one pwrite(2) and one fdatasync(2) per batch of records.
	AppendLogPwrite = "log/pwrite"
	// AppendLogURing is iopath.Log with WithEngine("io_uring"): a
	// WRITE linked to an FSYNC (DATASYNC) per batch, on a ring.
	AppendLogURing = "log/io_uring"
)

// AppendMethods lists the append methods, in table order.
func AppendMethods() []string {
	return []string{AppendFileFsync, AppendFileFdatasync, AppendLogPwrite, AppendLogURing}
}

// Bounds and defaults of an AppendConfig.
const (
	// MinAppendRecord is the smallest record: it carries its writer and
	// sequence number at its start and again at its end (8 bytes each),
	// so that the check can tell every record apart.
	MinAppendRecord = 16
	// MaxAppendRecord is the largest record.
	MaxAppendRecord = 16 << 20
	// MaxAppendWriters bounds the goroutines appending at once.
	MaxAppendWriters = 4096
	// DefaultAppendRecord is the default record size.
	DefaultAppendRecord = 4 << 10
	// DefaultAppendDuration is how long each run appends by default.
	DefaultAppendDuration = time.Second
	// DefaultAppendCap bounds the file of one run: a run that reaches
	// it stops early (its rate stays right: records over the time it
	// ran), so that a fast disk cannot fill the filesystem.
	DefaultAppendCap = 1 << 30
	// minAppendCap is the least room a run's file may have: less says
	// nothing about a disk.
	minAppendCap = 16 << 20
)

// DefaultAppendWriters are the writer counts measured by default.
func DefaultAppendWriters() []int { return []int{1, 8, 64} }

// AppendConfig is a durable-append benchmark (bench --append).
type AppendConfig struct {
	// Dir is where each run's file is made (a new temporary file per
	// run, removed after it). It must exist.
	Dir string
	// Methods are the append methods, in table order (default
	// AppendMethods).
	Methods []string
	// Writers are the goroutine counts, each a group of rows.
	Writers []int
	// RecordSize is the bytes of each record.
	RecordSize int
	// Duration is how long each run appends.
	Duration time.Duration
	// Runs per method and writer count, interleaved, each a child.
	Runs int
	// MaxBytes bounds each run's file (records and their framing); a
	// run stops early there. It is lowered to half the free space of
	// Dir when that is less, and the report says so.
	MaxBytes int64

	// Command and Version are recorded in the report.
	Command, Version string
	// ChildCommand starts a child, as Config's does.
	ChildCommand []string
	// Progress, when set, is called before each run and once at the end
	// with done == total.
	Progress func(done, total int, what string)
	// TrackTemp, when set, is told each run's file when it is made and
	// returns the function that forgets it once removed (see Config).
	TrackTemp func(path string) (forget func())
}

func (c *AppendConfig) setDefaults() {
	if len(c.Methods) == 0 {
		c.Methods = AppendMethods()
	}
	if len(c.Writers) == 0 {
		c.Writers = DefaultAppendWriters()
	}
	if c.RecordSize == 0 {
		c.RecordSize = DefaultAppendRecord
	}
	if c.Duration == 0 {
		c.Duration = DefaultAppendDuration
	}
	if c.Runs == 0 {
		c.Runs = 3
	}
	if c.MaxBytes == 0 {
		c.MaxBytes = DefaultAppendCap
	}
}

// Validate checks the configuration before anything runs; its errors
// are about the settings (usage), never about the directory.
func (c *AppendConfig) Validate() error {
	c.setDefaults()
	if c.Runs < 1 || c.Runs > MaxRuns {
		return fmt.Errorf("runs %d out of range [1, %d]", c.Runs, MaxRuns)
	}
	if c.Duration <= 0 || c.Duration > time.Hour {
		return fmt.Errorf("duration %v out of range (0, 1h]", c.Duration)
	}
	if c.RecordSize < MinAppendRecord || c.RecordSize > MaxAppendRecord {
		return fmt.Errorf("record size %s out of range [%d B, %s] (a record carries its writer and number twice, 16 bytes)",
			units.FormatSize(int64(c.RecordSize)), MinAppendRecord, units.FormatSize(MaxAppendRecord))
	}
	if c.MaxBytes < minAppendCap {
		return fmt.Errorf("the cap on a run's file, %s, is less than %s", units.FormatSize(c.MaxBytes), units.FormatSize(minAppendCap))
	}
	seen := map[int]bool{}
	for _, w := range c.Writers {
		if w < 1 || w > MaxAppendWriters {
			return fmt.Errorf("writers %d out of range [1, %d]", w, MaxAppendWriters)
		}
		if seen[w] {
			return fmt.Errorf("writers %d named twice", w)
		}
		seen[w] = true
	}
	seenM := map[string]bool{}
	for _, m := range c.Methods {
		if !slices.Contains(AppendMethods(), m) {
			return fmt.Errorf("unknown append method %q (have %s)", m, strings.Join(AppendMethods(), ", "))
		}
		if seenM[m] {
			return fmt.Errorf("append method %q named twice", m)
		}
		seenM[m] = true
	}
	return nil
}

// AppendInfo describes what bench --append measured: where its files
// were, the record size, how long each run appended and the cap on a
// run's file.
type AppendInfo struct {
	// Dir is the directory of the runs' files (each made for one run
	// and removed after it), and Filesystem its filesystem's type.
	Dir        string `json:"dir"`
	Filesystem string `json:"filesystem"`
	// RecordSizeBytes is the size of every record.
	RecordSizeBytes int `json:"record_size_bytes"`
	// DurationNs is how long each run appended, unless it reached
	// MaxBytes first.
	DurationNs int64 `json:"duration_ns"`
	// MaxBytes is the cap on a run's file.
	MaxBytes int64 `json:"max_bytes"`
}

// ErrRecordsLost is returned (with the full report) when a run did not
// read back every record it had acknowledged, intact: a method lost or
// damaged durable data.
var ErrRecordsLost = errors.New("records lost or corrupted")

// appendHeader is the bytes of framing Log adds to a record, and the
// os.File methods' share of the cap: every run reserves a record's size
// and this per record, so that all stop at the same count.
const appendHeader = iopath.LogHeaderLen

// MeasureAppend measures cfg: every method appends for cfg.Duration from
// each writer count, cfg.Runs times, the methods' runs interleaved, each
// run a child process with a file of its own. As Measure, it returns a
// complete report even when methods failed; its error is a context
// error when interrupted, ErrRecordsLost when a run lost records,
// ErrNothingMeasured or ErrFailed.
func MeasureAppend(ctx context.Context, cfg AppendConfig) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	dir := filepath.Clean(cfg.Dir)
	if err := CheckAppendDir(dir); err != nil {
		return nil, err
	}
	capBytes := cfg.MaxBytes
	var notes []string
	if _, avail, _, err := sys.Statfs(dir); err != nil {
		return nil, err
	} else if half := int64(avail / 2); half < capBytes {
		if half < minAppendCap {
			return nil, &fs.PathError{Op: "bench --append", Path: dir, Err: fmt.Errorf("%w: %s free; a run's file needs room to grow (at least %s, twice that free): give a --dir with more room",
				sys.ENOSPC, units.FormatSize(int64(avail)), units.FormatSize(minAppendCap))}
		}
		capBytes = half &^ (1<<20 - 1)
		notes = append(notes, fmt.Sprintf("the cap on a run's file is %s, half the free space of %s (not %s)",
			units.FormatSize(capBytes), units.QuotePath(dir), units.FormatSize(cfg.MaxBytes)))
	}
	rep := &Report{
		SchemaVersion: SchemaVersion,
		Tool:          ToolIopath,
		Command:       cfg.Command,
		Started:       time.Now().UTC().Truncate(time.Second),
		Machine:       features.DescribeMachine(dir, cfg.Version),
		Sweep:         Sweep{BlockSizes: []int{cfg.RecordSize}, Workers: cfg.Writers, Caches: []string{string(Warm)}},
		Notes:         []string{},
	}
	rep.Machine.LatencyClock = metrics.ClockSource()
	rep.Append = &AppendInfo{Dir: dir, Filesystem: rep.Machine.Filesystem, RecordSizeBytes: cfg.RecordSize,
		DurationNs: int64(cfg.Duration), MaxBytes: capBytes}
	rep.Notes = append(rep.Notes,
		fmt.Sprintf("each run appends %s records from every writer for %v to a new, empty file in %s (removed after the run); "+
			"then its child closes the file, drops its pages from the page cache and reads every record back: "+
			"a record acknowledged but missing or damaged fails the run", units.FormatSize(int64(cfg.RecordSize)), cfg.Duration, units.QuotePath(dir)),
		fmt.Sprintf("a run whose file reaches %s stops early; its records/s is over the time it ran", units.FormatSize(capBytes)))
	rep.Notes = append(rep.Notes, notes...)
	switch rep.Machine.Filesystem {
	case "tmpfs", "ramfs":
		rep.Notes = append(rep.Notes, fmt.Sprintf("%s is on %s: its files live in memory, and fsync and fdatasync cost nothing there; "+
			"measure on a disk's filesystem with --dir to see what durability costs", units.QuotePath(dir), rep.Machine.Filesystem))
	}
	argv := cfg.ChildCommand
	if len(argv) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find own executable for child runs: %w", err)
		}
		argv = []string{exe}
	}

	type arow struct {
		res  *Result
		hist *metrics.Histogram
		skip bool
	}
	var plan [][]*arow
	total := 0
	for _, w := range cfg.Writers {
		var rows []*arow
		for _, m := range cfg.Methods {
			rows = append(rows, &arow{hist: metrics.NewHistogram(),
				res: &Result{Tool: ToolIopath, Engine: m, Cache: string(Warm), Pattern: "append", BS: cfg.RecordSize,
					Workers: w, Runs: []Run{}}})
			total += cfg.Runs
		}
		plan = append(plan, rows)
	}

	done := 0
	var ctxErr error
	var firstFail, firstLost string
	for _, rows := range plan {
	runs:
		for n := 0; n < cfg.Runs && ctxErr == nil; n++ {
			for _, r := range rows {
				if ctx.Err() != nil {
					ctxErr = ctx.Err()
					break runs
				}
				if r.skip {
					continue
				}
				done++
				if cfg.Progress != nil {
					cfg.Progress(done-1, total, fmt.Sprintf("%s ×%d run %d/%d", r.res.Engine, r.res.Workers, n+1, cfg.Runs))
				}
				req := appendRequest{Method: r.res.Engine, Writers: r.res.Workers, RecordSize: cfg.RecordSize,
					DurationNs: int64(cfg.Duration), MaxBytes: capBytes}
				run, hist, notSupported := appendRun(ctx, argv, dir, cfg.TrackTemp, &req)
				if ctx.Err() != nil {
					ctxErr = ctx.Err()
					break runs
				}
				if notSupported {
					r.res.Error = run.Error
					r.skip = true
					continue
				}
				if run.Error == "" && run.Verified != "" {
					ok := true
					run.ChecksumOK = &ok
				}
				if run.Error == "" {
					r.hist.Merge(hist)
				} else {
					what := fmt.Sprintf("%s ×%d: %s", r.res.Engine, r.res.Workers, run.Error)
					if firstFail == "" {
						firstFail = what
					}
					if run.ChecksumOK != nil && !*run.ChecksumOK && firstLost == "" {
						firstLost = what
					}
				}
				r.res.Runs = append(r.res.Runs, run)
			}
		}
		// Every planned row is in the report, those an interrupt kept
		// from running too.
		for _, r := range rows {
			summarize(r.res, r.hist)
			summarizeAppend(r.res)
			if ctxErr != nil && !r.skip {
				cutShort(r.res, cfg.Runs)
			}
			rep.Results = append(rep.Results, *r.res)
		}
	}
	rep, err := finish(rep, cfg.Progress, total, ctxErr, nil, firstFail)
	if errors.Is(err, ErrChecksum) && firstLost != "" {
		err = fmt.Errorf("%w: %s", ErrRecordsLost, firstLost)
	}
	return rep, err
}

// CheckAppendDir says why dir cannot take the files of bench --append:
// it is missing, not a directory, on a pseudo-filesystem, or not
// writable (a file is made in it and removed to find out).
func CheckAppendDir(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return &fs.PathError{Op: "bench --append", Path: dir, Err: errors.New("not a directory")}
	}
	if PseudoFile(dir) {
		return &fs.PathError{Op: "bench --append", Path: dir, Err: ErrPseudoFile}
	}
	f, err := os.CreateTemp(dir, "iopath-append-*.log")
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(f.Name())
}

// appendRun makes one run: a new empty file in dir (told to track until
// it is removed), a child appending to it, and the file removed after,
// whatever happened.
func appendRun(ctx context.Context, argv []string, dir string, track func(string) func(), req *appendRequest) (Run, *metrics.Histogram, bool) {
	f, err := os.CreateTemp(dir, "iopath-append-*.log")
	if err != nil {
		return Run{Error: fmt.Sprintf("make the run's file: %v", err)}, nil, false
	}
	req.Path = f.Name()
	f.Close()
	forget := func() {}
	if track != nil {
		forget = track(req.Path)
	}
	defer func() {
		os.Remove(req.Path)
		forget()
		// The removal's metadata is made durable now, not during the
		// next run.
		if fd, err := sys.Open(dir, sys.O_RDONLY|sys.O_DIRECTORY); err == nil {
			sys.Fsync(fd)
			sys.Close(fd)
		}
	}()
	none := func() (float64, error) { return 0, nil }
	unknown := func() (float64, error) { return 0, errors.New("no residency: the file is new") }
	// The noise guard without a cache state: only other processes' CPU
	// makes an append run noisy, the kernel's write-back threads' (for
	// the run's syncs) recorded apart, as for a write run.
	return guardWith(ctx, "", true, none, unknown, func() (Run, *metrics.Histogram, time.Duration, bool) {
		return runChild(ctx, argv, &childRequest{Append: req}, nil)
	})
}

// summarizeAppend fills the append figures from the runs that succeeded.
func summarizeAppend(r *Result) {
	var ok []Run
	for _, run := range r.Runs {
		if run.Error == "" && run.Blocks > 0 {
			ok = append(ok, run)
		}
	}
	if len(ok) == 0 {
		return
	}
	r.SyncsPerRecord = stats.MedianOf(ok, func(x Run) float64 { return float64(x.Syncs) / float64(x.Blocks) })
	r.CPUUsPerRecord = stats.MedianOf(ok, func(x Run) float64 { return float64(x.UserNs+x.SysNs) / 1e3 / float64(x.Blocks) })
}

// appendRequest is a durable-append run, as the runner asks a child.
type appendRequest struct {
	Method     string `json:"method"`
	Path       string `json:"path"` // an empty file the runner made
	Writers    int    `json:"writers"`
	RecordSize int    `json:"record_size"`
	DurationNs int64  `json:"duration_ns"`
	MaxBytes   int64  `json:"max_bytes"`
}

// appender is one append method, open on a file.
type appender interface {
	// append makes rec durable, or fails.
	append(ctx context.Context, rec []byte) error
	// counts are the sync calls and the write calls made so far.
	counts() (syncs, writes int64)
	// close closes the file, and for a Log checks that it counted
	// records appended.
	close(records int64) error
	// readBack calls fn with every record of the closed file, in order.
	readBack(size int, fn func(rec []byte)) error
}

// openAppender opens path, an empty file, with method.
func openAppender(method, path string) (appender, error) {
	switch method {
	case AppendFileFsync, AppendFileFdatasync:
		// As most Go code opens a file it appends to.
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return nil, err
		}
		return &fileAppender{f: f, path: path, fd: int(f.Fd()), datasync: method == AppendFileFdatasync}, nil
	case AppendLogPwrite, AppendLogURing:
		engine := "pwrite"
		if method == AppendLogURing {
			engine = "io_uring"
		}
		l, err := iopath.OpenLog(path, iopath.WithEngine(engine))
		if err != nil {
			return nil, err
		}
		if got := l.Choice().Engine; got != engine {
			l.Close()
			return nil, fmt.Errorf("OpenLog with WithEngine(%q) commits with %q", engine, got)
		}
		return &logAppender{l: l, path: path}, nil
	}
	return nil, fmt.Errorf("unknown append method %q", method)
}

// fileAppender is os.File.Write and a sync per record, under a mutex.
type fileAppender struct {
	mu       sync.Mutex
	f        *os.File
	path     string
	fd       int
	datasync bool
	syncs    int64 // under mu
}

func (a *fileAppender) append(_ context.Context, rec []byte) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, err := a.f.Write(rec); err != nil {
		return err
	}
	a.syncs++
	if a.datasync {
		if err := sys.Fdatasync(a.fd); err != nil {
			return &fs.PathError{Op: "fdatasync", Path: a.path, Err: err}
		}
		return nil
	}
	return a.f.Sync()
}

func (a *fileAppender) counts() (syncs, writes int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.syncs, a.syncs
}

func (a *fileAppender) close(int64) error { return a.f.Close() }

func (a *fileAppender) readBack(size int, fn func(rec []byte)) error {
	f, err := os.Open(a.path)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, max(1, (1<<20)/size)*size)
	for {
		n, err := io.ReadFull(f, buf)
		for off := 0; off+size <= n; off += size {
			fn(buf[off : off+size])
		}
		if tail := n % size; tail != 0 {
			fn(buf[n-tail : n]) // a torn record: too short, which the check counts
		}
		switch err {
		case nil:
		case io.EOF, io.ErrUnexpectedEOF:
			return nil
		default:
			return err
		}
	}
}

// logAppender is iopath.Log.
type logAppender struct {
	l    *iopath.Log
	path string
}

func (a *logAppender) append(ctx context.Context, rec []byte) error { return a.l.Append(ctx, rec) }

func (a *logAppender) counts() (syncs, writes int64) {
	s := a.l.Stats()
	return s.Commits, s.Writes
}

func (a *logAppender) close(records int64) error {
	st := a.l.Stats()
	if err := a.l.Close(); err != nil {
		return err
	}
	if st.Records != records {
		return fmt.Errorf("the Log counted %d durable records; its Appends returned nil %d times", st.Records, records)
	}
	return nil
}

func (a *logAppender) readBack(_ int, fn func(rec []byte)) error {
	return iopath.ReadLog(a.path, func(rec []byte) error { fn(rec); return nil })
}

// measureAppend is a child's append run: the writers append to req.Path
// until the time is up (or the file reaches its cap), then the file is
// closed, its pages are dropped and every record is read back and
// checked.
func measureAppend(ctx context.Context, req *appendRequest, resp *childResponse) *childResponse {
	fail := func(err error) *childResponse {
		resp.Error = err.Error()
		resp.NotSupported = isNotSupported(err)
		return resp
	}
	t0 := time.Now()
	a, err := openAppender(req.Method, req.Path)
	if err != nil {
		return fail(err)
	}
	closed := false
	defer func() {
		if !closed {
			a.close(-1)
		}
	}()
	size, writers := req.RecordSize, req.Writers
	chk := newAppendCheck(writers, size)
	acked := make([]int64, writers)
	hists := make([]*metrics.Histogram, writers)
	var stop, capped atomic.Bool
	var left atomic.Int64
	left.Store(req.MaxBytes)
	var errMu sync.Mutex
	var firstErr error
	start := make(chan struct{})
	var wg sync.WaitGroup
	for w := range writers {
		hists[w] = metrics.NewHistogram()
		rec := slices.Clone(chk.tmpl[w])
		wg.Go(func() {
			<-start
			h := hists[w]
			for seq := uint32(0); !stop.Load(); seq++ {
				if left.Add(-int64(size+appendHeader)) < 0 {
					capped.Store(true)
					stop.Store(true)
					return
				}
				stamp(rec, w, seq)
				t := metrics.Ticks()
				if err := a.append(ctx, rec); err != nil {
					errMu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					errMu.Unlock()
					stop.Store(true)
					return
				}
				h.RecordTicks(metrics.Ticks() - t)
				acked[w]++
			}
		})
	}
	resp.SetupNs = int64(time.Since(t0))
	var records int64
	err = measurePasses(resp, 0, false, "log", func() (pass, error) {
		timer := time.AfterFunc(time.Duration(req.DurationNs), func() { stop.Store(true) })
		close(start)
		wg.Wait()
		timer.Stop()
		if firstErr != nil {
			return pass{}, firstErr
		}
		lat := hists[0]
		for _, h := range hists[1:] {
			lat.Merge(h)
		}
		for _, n := range acked {
			records += n
		}
		syncs, writes := a.counts()
		resp.Syncs = syncs
		var notes []string
		if capped.Load() {
			notes = append(notes, fmt.Sprintf("a run stopped early at the cap of %s on its file", units.FormatSize(req.MaxBytes)))
		}
		return pass{bytes: records * int64(size), items: records, syscalls: syncs + writes, lat: lat, notes: notes}, nil
	})
	if err != nil {
		return fail(err)
	}
	resp.Checksum = ""
	closed = true
	if err := a.close(records); err != nil {
		return fail(err)
	}
	// What the device holds: the file synced (it is, record by record)
	// and its pages dropped, then read.
	if err := drop(req.Path); err != nil {
		return fail(err)
	}
	if err := a.readBack(size, chk.add); err != nil {
		return fail(fmt.Errorf("read back: %w", err))
	}
	if err := chk.finish(acked); err != nil {
		resp.Mismatch = true
		return fail(err)
	}
	resp.Verified = "dropped"
	return resp
}

// stamp writes writer w and sequence number seq at both ends of rec.
func stamp(rec []byte, w int, seq uint32) {
	binary.LittleEndian.PutUint32(rec[0:], uint32(w))
	binary.LittleEndian.PutUint32(rec[4:], seq)
	copy(rec[len(rec)-8:], rec[:8])
}

// appendCheck checks the records read back: each of the right size,
// stamped alike at both ends by a known writer, with that writer's
// payload, and each writer's in the order it appended them, none
// missing.
type appendCheck struct {
	size    int
	tmpl    [][]byte // each writer's record, stamps aside
	next    []uint32 // each writer's next sequence number
	seen    int64
	damaged int64 // records that are not one written (torn, changed)
	repeats int64 // records read again, or out of their writer's order
	skipped int64 // records a writer's next one skipped over
	first   string
}

func newAppendCheck(writers, size int) *appendCheck {
	c := &appendCheck{size: size, tmpl: make([][]byte, writers), next: make([]uint32, writers)}
	for w := range writers {
		// Incompressible, and different for every writer.
		r := rand.New(rand.NewPCG(uint64(w)+1, 0x10ad))
		b := make([]byte, size)
		for i := 0; i < size; i += 8 {
			var x [8]byte
			binary.LittleEndian.PutUint64(x[:], r.Uint64())
			copy(b[i:], x[:])
		}
		c.tmpl[w] = b
	}
	return c
}

// note keeps the first thing found wrong.
func (c *appendCheck) note(format string, args ...any) {
	if c.first == "" {
		c.first = fmt.Sprintf(format, args...)
	}
}

func (c *appendCheck) damage(format string, args ...any) {
	c.damaged++
	c.note("record %d: "+format, append([]any{c.seen}, args...)...)
}

// add checks the next record read back.
func (c *appendCheck) add(rec []byte) {
	defer func() { c.seen++ }()
	if len(rec) != c.size {
		c.damage("%d bytes, want %d", len(rec), c.size)
		return
	}
	w, seq := binary.LittleEndian.Uint32(rec[0:]), binary.LittleEndian.Uint32(rec[4:])
	switch {
	case !bytes.Equal(rec[:8], rec[c.size-8:]):
		c.damage("its two ends disagree (torn or overwritten)")
		return
	case int(w) >= len(c.tmpl):
		c.damage("writer %d, but there were %d", w, len(c.tmpl))
		return
	case !bytes.Equal(rec[8:c.size-8], c.tmpl[w][8:c.size-8]):
		c.damage("writer %d's record %d: its bytes differ from what was written", w, seq)
		return
	case seq < c.next[w]:
		c.repeats++
		c.note("record %d: writer %d's record %d again, or out of order (after %d)", c.seen, w, seq, c.next[w]-1)
		return
	case seq > c.next[w]:
		c.skipped += int64(seq - c.next[w])
		c.note("record %d: writer %d's record %d follows its record %d: %d missing", c.seen, w, seq, int64(c.next[w])-1, seq-c.next[w])
	}
	c.next[w] = seq + 1
}

// finish returns an error counting the records lost or corrupted, when
// what was read back is not exactly what each writer had acknowledged
// (acked): an acknowledged record missing or damaged (a damaged record
// is counted once, whether or not it took the place of one), a record
// read twice or out of order, or one never acknowledged.
func (c *appendCheck) finish(acked []int64) error {
	missing, extra := c.skipped, int64(0)
	var total int64
	for w, n := range acked {
		total += n
		got := int64(c.next[w])
		switch {
		case got < n:
			missing += n - got
			c.note("writer %d: %d records acknowledged, its last in the file is record %d", w, n, got-1)
		case got > n:
			extra += got - n
			c.note("writer %d: %d records in the file, only %d acknowledged", w, got, n)
		}
	}
	bad := max(missing, c.damaged) + c.repeats + extra
	if bad == 0 {
		return nil
	}
	return fmt.Errorf("%w: %d records of %d acknowledged (%d missing, %d damaged, %d repeated or out of order, %d never acknowledged); first: %s",
		ErrRecordsLost, bad, total, missing, c.damaged, c.repeats, extra, c.first)
}
