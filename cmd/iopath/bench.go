package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/iopath/iopath/bench"
	"github.com/iopath/iopath/engine"
	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/fio"
	"github.com/iopath/iopath/gen"
	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/internal/units"
	"github.com/iopath/iopath/report"
)

func init() { subcommands = append(subcommands, newBenchCmd) }

type benchOptions struct {
	engines    []string
	pattern    string
	bs         []int64
	workers    []int
	qd         []int
	vectors    int
	size       int64
	dir        string
	runs       int
	caches     []string
	consume    string
	format     string
	wide       bool
	sqpoll     bool
	noLatency  bool
	minTime    time.Duration
	fio        bool
	fioErr     error // why --fio found no usable fio
	consumeSet bool
	html       string
	json       string
	observe    observeOptions // --profile, --perf, --trace
	force      bool           // overwrite existing output files (--html, --profile's, --perf's, --trace's)

	rw        string // --rw: read, randread, write, randwrite or append
	sync      string // --sync: the write runs' durability discipline
	writeFile string // --write-file: a new file to write (default: a temporary one)

	tree  bool   // --tree: many files
	files int    // --files: files in the temporary tree
	dist  string // --dist: their size distribution
	pool  int    // --pool: goroutines of the pool engine
	depth int    // --depth: io_uring files in flight per worker
	pack  string // --pack: an existing pack of the tree for the archive engine

	appends  bool          // --append: durable appends (benchappend.go)
	writers  []int         // --writers: goroutines appending at once, swept
	duration time.Duration // --duration: how long each append run appends
}

func newBenchCmd(stdout, stderr io.Writer) *cobra.Command {
	o := benchOptions{bs: []int64{engine.DefaultBlockSize}, workers: []int{1}, qd: []int{engine.DefaultQueueDepth},
		engines: bench.DefaultEngines(), caches: []string{"warm", "cold"},
		writers: bench.DefaultAppendWriters(), duration: bench.DefaultAppendDuration}
	cmd := &cobra.Command{
		Use:   "bench [FILE]",
		Short: "Read a file through every engine and print one side-by-side table",
		Long: `bench reads FILE through every engine, in each cache state, several times,
each run in a fresh child process, with runs interleaved (A B C, A B C, ...).
Every byte is checked against a plain pread reference. With no FILE it makes a
temporary file of random data (1GiB, less when disk or memory is short) and
removes it afterwards.

Figures: GiB/s is bytes handed to the consumer over the wall time of the
measured phase (open, read, consume, close; one-time setup such as ring
creation is not in it). CPU-s/GiB is the child's user+system CPU per GiB.
Latency is per block, from issue to data available. Syscalls are counted by
the engine at its own call sites, not the Go runtime's.

Sweeps: --bs, --workers and --qd take lists; every combination is a point,
and every point gets its own interleaved child runs. Engines without a queue
(all but io_uring) run once per block size and worker count.

--fio runs each engine's fio twin (read=sync, pread=psync, readv=vsync or
pvsync, mmap=mmap, io_uring=io_uring with fixed buffers and files) on the same
file and workload, interleaved with ours, and adds a "vs fio" ratio. fio does
not look at the data, so --fio measures with --consume none.

Noise: the runner records the CPU other processes used during each run
(/proc/stat) and the file's residency before and after. A run is marked noisy
when others took more than 10% of a core, or a warm run lost cached pages;
noisy runs are kept in the figures and shown.

Ctrl-C stops the benchmark: the report still lists every row, those not
run say so ("not run (interrupted)"; "error": "interrupted" in JSON), rows
cut short show what their runs measured, and the exit status is not 0. A
benchmark in which no engine could run at all fails with each one's
reason. FILE must be a regular file with a stable size: a pseudo-file
(/proc, /sys) is refused.

Where the time goes: --perf DIR records each run with Linux perf (cpu-clock
at --perf-freq Hz, kernel and Go frames, the measured phase only) and writes
one pprof profile per run into DIR (go tool pprof -http :8080 FILE: one flame
graph, the kernel beneath the Go code); the table, JSON and --html gain where
each engine's CPU went (user code, Go runtime, syscall entry/exit, kernel
copies, page faults, io_uring, the rest of the kernel) and --html a flame
graph per row. Without perf, or where the kernel forbids it, it says why and
how to allow it, and goes on. Every run records the Go runtime's threads,
goroutines, scheduling wait and GC (JSON; --wide), and --trace DIR writes a
go tool trace per run. docs/perf.md says how samples are counted.

Writes: --rw write, randwrite or append measures the write engines (write,
pwrite, pwritev, mmap, io_uring) instead, with --sync none (page cache only),
end (one fsync at the end, timed), every:N (fdatasync after every N blocks of
a worker; io_uring: an FSYNC once the writes before it completed), dsync
(O_DSYNC) or direct (O_DIRECT, the same as --cache direct). bench writes only to a file it makes:
a temporary one (removed after, also on Ctrl-C), or a new path given with
--write-file (never an existing one unless --force is given too, and never a
device or directory). Each write run makes one pass, and the file is then
read back from the device and every sector checked; the report says what the
sync mode promises across a power cut. --fio twins: sync, psync, pvsync,
mmap and io_uring with the same --fsync/--fdatasync/--sync/--direct options.

Durable appends: --append appends --size records (default 4KiB) from each
of --writers goroutine counts (default 1,8,64) for --duration a run, by
four methods: file+fsync (os.File.Write then f.Sync per record, under a
mutex: what most Go code does), file+fdatasync (the same with fdatasync),
log/pwrite and log/io_uring (iopath.Log, group commit). It reports durable
records per second, MB/s, P50/P99/P99.9 per append, fsyncs and CPU per
record, and a "vs file+fsync" ratio. Each run appends to a new temporary
file in --dir (default $TMPDIR, else /var/tmp), removed after the run;
the file is then read back and every acknowledged record checked. A run
stops early when its file reaches 1GiB (less when the disk is short).`,
		Example: `  iopath bench
  iopath bench --append
  iopath bench --append --writers 1,4,16,64 --size 512 --duration 2s --dir /data
  iopath bench --rw write --sync end --fio
  iopath bench --rw randwrite --bs 4k --sync every:1 --engines pwrite,io_uring
  iopath bench --rw write --cache direct --engines pwrite,io_uring --qd 32
  iopath bench /data/big.log --cache warm --consume none
  iopath bench --pattern rand --bs 4k --engines pread,io_uring --qd 32
  iopath bench --cache direct --engines pread,io_uring --format json
  iopath bench --consume none --fio --html report.html
  iopath bench --engines pread,io_uring --bs 4k,16k,128k,1m --qd 1,8,32,128 --cache warm
  iopath bench --profile prof/ && go tool pprof -http :8080 prof/io_uring-warm-seq-bs128KiB-w1-qd32-run1.pprof
  iopath bench --perf prof/ --html report.html && go tool pprof -http :8080 prof/pread-warm-seq-bs128KiB-w1-run1.pb.gz
  iopath bench --tree --cache cold --perf prof/ --wide`,
		Args: argsUsage(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.consumeSet = cmd.Flags().Changed("consume")
			if o.appends {
				return runBenchAppend(cmd.Context(), o, cmd, args, stdout, stderr)
			}
			for _, name := range []string{"writers", "duration"} {
				if cmd.Flags().Changed(name) {
					return usagef("bench: --%s applies to --append (reads and --rw writes take --workers and --min-time)", name)
				}
			}
			if !o.tree {
				for _, name := range []string{"files", "dist", "pool", "depth", "pack"} {
					if cmd.Flags().Changed(name) {
						return usagef("bench: --%s applies to --tree only", name)
					}
				}
			}
			if err := o.setWrite(cmd, args); err != nil {
				return err
			}
			if o.tree {
				return runBenchTree(cmd.Context(), o, cmd, args, stdout, stderr)
			}
			return runBench(cmd.Context(), o, args, commandLine(cmd, args), cmd.Flags().Changed("size"), stdout, stderr)
		},
	}
	inner := cmd.RunE
	cmd.RunE = func(cmd *cobra.Command, args []string) error { return prefixed("bench", inner(cmd, args)) }
	f := cmd.Flags()
	f.Var(stringListValue{&o.engines}, "engines", "engines to compare, comma-separated (have: "+strings.Join(engine.Names(), ", ")+")")
	f.StringVar(&o.pattern, "pattern", "seq", "access pattern of reads: seq or rand (writes: see --rw)")
	f.StringVar(&o.rw, "rw", "read", "what to measure, in fio's words: read, randread, write, randwrite or append")
	f.StringVar(&o.sync, "sync", "none", "writes: none, end (one fsync at the end), every:N (fdatasync every N blocks), dsync (O_DSYNC), direct (O_DIRECT)")
	f.StringVar(&o.writeFile, "write-file", "", "writes: write this new file instead of a temporary one (it must not exist, unless --force; removed after)")
	f.Var(sizeListValue{&o.bs}, "bs", "block sizes, comma-separated to sweep (e.g. 4k, 128KiB, 4k,16k,128k,1m)")
	f.Var(intListValue{&o.workers}, "workers", "workers, comma-separated to sweep (goroutines; io_uring: one ring and thread each)")
	f.Var(intListValue{&o.qd}, "qd", "io_uring queue depths per worker, comma-separated to sweep")
	f.IntVar(&o.vectors, "vectors", engine.DefaultVectors, "readv: buffers per preadv call")
	f.Var(sizeValue{&o.size}, "size", "size of the temporary file when no FILE is given (default 1GiB, less when short of disk or memory); with --append, the size of each record (default 4KiB)")
	f.StringVar(&o.dir, "dir", "", "directory for the temporary file, or --append's files (default $TMPDIR, else /var/tmp)")
	f.IntVar(&o.runs, "runs", 3, "runs per engine and cache state, each in its own process")
	f.Var(stringListValue{&o.caches}, "cache", "cache states, comma-separated: warm, cold, direct (O_DIRECT)")
	f.StringVar(&o.consume, "consume", "checksum", "what the consumer does with each block: checksum (reads every byte), none (fio's semantics), touch (one byte per page)")
	f.StringVar(&o.format, "format", "table", "output on stdout: "+strings.Join(report.Formats(), ", "))
	f.BoolVar(&o.wide, "wide", false, "table and markdown: also show the less-used columns (usr% sys%, P99.9, syscalls, faults, context switches, qd)")
	f.StringVar(&o.html, "html", "", "also write a self-contained HTML report with charts to this file")
	f.BoolVar(&o.fio, "fio", false, "also run each engine's fio twin on the same workload (needs fio on PATH)")
	o.observe.addFlags(f)
	f.StringVar(&o.json, "json", "", "also write this run's JSON report to this file, whatever --format prints")
	f.BoolVar(&o.force, "force", false, "overwrite output files that exist (--html, --json, the files of --profile, --perf and --trace), and let --write-file name an existing file, whose content is destroyed")
	f.BoolVar(&o.tree, "tree", false, "many small files: read every file under DIR (the argument; none: a temporary tree) with each batch engine")
	f.IntVar(&o.files, "files", 100000, "--tree without DIR: files in the temporary tree")
	f.StringVar(&o.dist, "dist", "4KiB", "--tree without DIR: their sizes: 4KiB, a range 1KiB-64KiB, or lognormal:11KiB")
	f.IntVar(&o.pool, "pool", bench.DefaultPoolWorkers, "--tree: goroutines of the pool engine")
	f.IntVar(&o.depth, "depth", 0, "--tree: io_uring files in flight per worker (default 64)")
	f.StringVar(&o.pack, "pack", "", "--tree: the archive engine reads this pack of the tree (default: a temporary tar.zst made from it)")
	f.BoolVar(&o.sqpoll, "sqpoll", false, "io_uring: use a kernel submission-polling thread (a thread of the process: its CPU is counted)")
	f.BoolVar(&o.noLatency, "no-latency", false, "do not record per-block latency (to measure what recording costs)")
	f.BoolVar(&o.appends, "append", false, "durable appends: os.File.Write+fsync or fdatasync per record against iopath.Log (pwrite, io_uring), side by side")
	f.Var(intListValue{&o.writers}, "writers", "--append: goroutines appending at once, comma-separated to sweep")
	f.DurationVar(&o.duration, "duration", bench.DefaultAppendDuration, "--append: how long each run appends")
	f.DurationVar(&o.minTime, "min-time", time.Second, "warm and direct runs repeat passes over the file until they have measured this long (cold runs make one pass)")
	return cmd
}

func (o *benchOptions) config(args []string) (bench.Config, error) {
	cfg := bench.Config{
		Engines:     o.engines,
		Runs:        o.runs,
		Workers:     o.workers,
		QueueDepths: o.qd,
		Vectors:     o.vectors,
		SQPoll:      o.sqpoll,
		NoLatency:   o.noLatency,
		MinTime:     o.minTime,
		ProfileDir:  o.observe.profile,
		PerfDir:     o.observe.perf,
		TraceDir:    o.observe.trace,
		PerfFreq:    o.observe.perfFreq,
		Version:     version,

		ProfileReplace: o.force,
		TrackTemp:      cleanups.removeOnExit,
		TrackTempDir:   cleanups.removeTreeOnExit,
	}
	for _, c := range []struct {
		flag string
		v    []int
		max  int
	}{{"--workers", o.workers, engine.MaxWorkers}, {"--qd", o.qd, engine.MaxQueueDepth},
		{"--vectors", []int{o.vectors}, engine.MaxVectors}, {"--runs", []int{o.runs}, bench.MaxRuns}} {
		for _, v := range c.v {
			if v < 1 || v > c.max {
				return cfg, usagef("bench: %s %d: want 1 to %d", c.flag, v, c.max)
			}
		}
	}
	for _, bs := range o.bs {
		if bs < 1 {
			return cfg, usagef("bench: --bs must be positive")
		}
		if bs > engine.MaxBlockSize {
			return cfg, usagef("bench: --bs %s: at most %s", units.FormatSize(bs), units.FormatSize(engine.MaxBlockSize))
		}
		cfg.BlockSizes = append(cfg.BlockSizes, int(bs))
	}
	// Only io_uring (and fio's twins) keep a queue of buffers, and only
	// readv and pwritev a vector of them.
	qd, vectors := 1, 1
	if slices.Contains(o.engines, "io_uring") || o.fio {
		qd = slices.Max(o.qd)
	}
	if slices.Contains(o.engines, "readv") || slices.Contains(o.engines, "pwritev") {
		vectors = o.vectors
	}
	if err := checkBufferMemory("bench", slices.Max(o.workers), qd, vectors, slices.Max(o.bs)); err != nil {
		return cfg, err
	}
	var err error
	if cfg.Pattern, err = engine.ParsePattern(o.pattern); err != nil {
		return cfg, usagef("bench: --pattern: %v", err)
	}
	if o.writes() {
		cfg.Write = true
		if cfg.Sync, err = engine.ParseSync(o.sync); err != nil {
			return cfg, usagef("bench: --sync: %v", err)
		}
	}
	for _, c := range o.caches {
		cs, err := bench.ParseCache(c)
		if err != nil {
			return cfg, usagef("bench: --cache: %v", err)
		}
		cfg.Caches = append(cfg.Caches, cs)
	}
	if cfg.Consume, err = bench.ParseConsume(o.consume); err != nil {
		return cfg, usagef("bench: --consume: %v", err)
	}
	if o.fio && !cfg.Write {
		// fio does nothing with the data it reads: a ratio against an
		// engine that checksums every byte would compare different work.
		if o.consumeSet && cfg.Consume != bench.None {
			return cfg, usagef("bench: --fio compares with fio, which does not look at the data: use --consume none (the default with --fio)")
		}
		cfg.Consume = bench.None
	}
	if !slices.Contains(report.Formats(), o.format) {
		return cfg, usagef("bench: --format %q: want one of %s", o.format, strings.Join(report.Formats(), ", "))
	}
	if o.html != "" {
		if err := checkOutputFile(o.html, o.force, args...); err != nil {
			return cfg, usagef("bench: --html: %v", err)
		}
	}
	if err := checkJSONFile("bench", o.json, o.html, o.force, args...); err != nil {
		return cfg, err
	}
	if err := o.observe.checkDirs("bench"); err != nil {
		return cfg, err
	}
	cfg.Path = "check" // validated before any file exists
	if err := cfg.Validate(); err != nil {
		return cfg, usagef("bench: %v", err)
	}
	cfg.Path = ""
	// The per-run files' names are known now: none may be overwritten
	// without --force, and that is said before anything runs.
	for _, p := range cfg.RunFiles() {
		if _, err := os.Lstat(p); err == nil {
			if err := checkOutputFile(p, o.force, args...); err != nil {
				return cfg, usagef("bench: %v", err)
			}
		}
	}
	return cfg, nil
}

func runBench(ctx context.Context, o benchOptions, args []string, command string, sizeSet bool, stdout, stderr io.Writer) error {
	cfg, err := o.config(args)
	if err != nil {
		return err
	}
	cfg.Command = command
	o.observe.probePerf(stderr)
	cfg.PerfDir = o.observe.perf
	if o.fio {
		info, err := fio.Find()
		if err != nil {
			o.fioErr = err
			fmt.Fprintf(stderr, "iopath: %v; going on without fio rows\n", err)
		} else {
			cfg.Fio = &info
		}
	}
	prog := newProgress(stderr)

	if cfg.Write {
		path, cleanup, err := o.writeTarget(ctx, sizeSet, prog, stderr)
		if err != nil {
			return err
		}
		defer cleanup()
		cfg.Path, cfg.TempFile = path, o.writeFile == ""
	} else if len(args) == 1 {
		if sizeSet {
			return usagef("bench: --size is for the temporary file; it cannot be used with FILE")
		}
		cfg.Path = args[0]
	} else {
		dir := o.dir
		if dir == "" {
			dir = defaultTempDir()
		}
		size := o.size
		if !sizeSet {
			if size, err = defaultBenchSize(dir); err != nil {
				return err
			}
		} else if size <= 0 {
			return usagef("bench: --size must be positive")
		}
		fmt.Fprintf(stderr, "iopath: making a %s temporary file in %s (give a FILE to measure your own)\n", units.FormatSize(size), quotePath(dir))
		// The file is the interrupt handler's to remove, should the
		// process be stopped at once, from when it exists until it is
		// removed here.
		forget := func() {}
		path, err := gen.TempFile(ctx, dir, size, gen.Options{
			Progress: prog.bytes("writing test file"),
			Temp:     func(p string) func() { forget = cleanups.removeOnExit(p); return forget },
		})
		prog.done()
		if err != nil {
			return err
		}
		defer func() {
			os.Remove(path)
			forget()
		}()
		cfg.Path, cfg.TempFile = path, true
	}

	cfg.Progress = prog.steps()
	rep, err := bench.Measure(ctx, cfg)
	prog.done()
	if rep == nil {
		return err
	}
	if n := o.observe.perfNote(); n != "" {
		rep.Notes = append(rep.Notes, n)
	}
	if o.fio && cfg.Fio == nil {
		rep.Notes = append(rep.Notes, fmt.Sprintf("--fio: there are no fio rows: %v", o.fioErr))
	}
	rerr := report.Write(stdout, o.format, rep, report.DocOptions{Wide: o.wide})
	if o.html != "" {
		if herr := writeFileAtomic(o.html, o.force, func(w io.Writer) error { return report.HTML(w, rep) }); herr != nil {
			rerr = errors.Join(rerr, herr)
		} else {
			fmt.Fprintf(stderr, "iopath: wrote %s\n", quotePath(o.html))
		}
	}
	if jerr := writeOutput(stderr, o.json, o.force, func(w io.Writer) error { return report.JSON(w, rep) }); jerr != nil {
		rerr = errors.Join(rerr, jerr)
	}
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return errors.New("bench: interrupted; the results above are incomplete")
		}
		return fmt.Errorf("bench: %w", err)
	}
	return rerr
}

// commandLine rebuilds the command as given: its path, its arguments and
// the flags that were set, for the report.
func commandLine(cmd *cobra.Command, args []string) string {
	parts := append([]string{cmd.CommandPath()}, args...)
	cmd.Flags().Visit(func(f *pflag.Flag) {
		v := f.Value.String()
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			v = strings.Join(sv.GetSlice(), ",") // not "[a b]"
		}
		parts = append(parts, "--"+f.Name+"="+v)
	})
	return strings.Join(parts, " ")
}

// defaultTempDir is $TMPDIR when set, else /var/tmp (usually on disk, where
// cold and O_DIRECT runs mean something; /tmp is often tmpfs).
func defaultTempDir() string {
	if d := os.Getenv("TMPDIR"); d != "" {
		return d
	}
	if st, err := os.Stat("/var/tmp"); err == nil && st.IsDir() {
		return "/var/tmp"
	}
	return os.TempDir()
}

// defaultBenchSize is 1GiB, or a quarter of the free disk or of the
// available memory when that is less.
func defaultBenchSize(dir string) (int64, error) {
	const want = 1 << 30
	const least = 16 << 20
	size := int64(want)
	_, avail, _, err := sys.Statfs(dir)
	if err != nil {
		return 0, err
	}
	size = min(size, int64(avail/4))
	if mem := features.MemInfo("MemAvailable"); mem > 0 {
		size = min(size, mem/4)
	}
	size = size / (4 << 20) * (4 << 20)
	if size < least {
		return 0, fmt.Errorf("bench: %s: only %s free; give a FILE or a --dir with more room", dir, units.RoughSize(int64(avail)))
	}
	return size, nil
}

// checkBufferMemory refuses a workload whose I/O buffers (up to workers ×
// max(qd, vectors) × bs, io_uring's share) would take more than half of the
// memory available now: better a usage error than an engine failing to
// allocate, or the machine swapping, half-way through.
func checkBufferMemory(cmd string, workers, qd, vectors int, bs int64) error {
	need := float64(workers) * float64(max(qd, vectors)) * float64(bs)
	avail := features.MemInfo("MemAvailable")
	if avail <= 0 || need <= float64(avail)/2 {
		return nil
	}
	return usagef("%s: buffers for %d workers × %d × %s would need %s, more than half of the %s of memory available",
		cmd, workers, max(qd, vectors), units.FormatSize(bs), units.RoughSize(int64(min(need, 1<<62))), units.RoughSize(avail))
}

// prefixed puts "name: " before err's message unless it starts so already,
// so that the one line a failed command prints names the command.
func prefixed(name string, err error) error {
	if err == nil || strings.HasPrefix(err.Error(), name+":") || strings.HasPrefix(err.Error(), name+" ") {
		return err
	}
	return fmt.Errorf("%s: %w", name, err)
}
