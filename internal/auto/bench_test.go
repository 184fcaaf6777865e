package auto

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iopath/iopath/batch"
	"github.com/iopath/iopath/engine"
	"github.com/iopath/iopath/gen"
	"github.com/iopath/iopath/internal/sys"
)

// The benchmarks show Auto beside every fixed engine on the default
// workloads, one sub-benchmark each, so that one run prints them side by
// side:
//
//	go test -run '^$' -bench . -benchtime=1x ./internal/auto
//	IOPATH_BENCH_FULL=1 go test -run '^$' -bench . -benchtime=3x ./internal/auto
//
// "auto" calls Decide in its timed loop (so its cost is in the figure) and
// runs what it chose; each other sub-benchmark runs one fixed engine. The
// parent logs Auto's choice, the best fixed engine and the ratio. Data
// lives in $IOPATH_BENCH_DIR (default /var/tmp), named by size, made once
// and reused: big files of 256 MiB and a tree of 10,000 files of 4 KiB by
// default, 1 GiB and 100,000 files with IOPATH_BENCH_FULL=1. Cold means
// every file is dropped from the page cache (POSIX_FADV_DONTNEED, residency
// checked) before each op, outside the timer; warm means read once first.
//
// go test runs a sub-benchmark's ops back to back, so for ratios that
// survive a noisy machine run the whole command several times (-count 1)
// and compare medians: the runs of different engines are then interleaved.

func benchFull() bool { return os.Getenv("IOPATH_BENCH_FULL") == "1" }

func benchDir() string {
	if d := os.Getenv("IOPATH_BENCH_DIR"); d != "" {
		return d
	}
	return "/var/tmp"
}

// benchFile returns the path of a file of size bytes of gen's data in the
// bench directory, made if missing.
func benchFile(b *testing.B, size int64) string {
	b.Helper()
	name := fmt.Sprintf("iopath-auto-%dm.dat", size>>20)
	if size >= 1<<30 {
		name = fmt.Sprintf("iopath-auto-%dg.dat", size>>30)
	}
	path := filepath.Join(benchDir(), name)
	if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() && st.Size() == size {
		return path
	}
	// gen refuses to replace an existing file: one of another size under
	// this name is not ours to overwrite.
	if err := gen.File(context.Background(), path, size, gen.Options{Sync: true}); err != nil {
		b.Fatalf("%v (a benchmark file of %d bytes is expected there)", err, size)
	}
	return path
}

// benchTree returns a tree of n files of 4 KiB in the bench directory,
// made if missing, and the paths of its files.
func benchTree(b *testing.B, n int) (string, []string) {
	b.Helper()
	dir := filepath.Join(benchDir(), fmt.Sprintf("iopath-auto-t%dk", n/1000))
	want := fmt.Sprintf("files=%d size=4KiB seed=0 fanout=100", n)
	if m, err := os.ReadFile(filepath.Join(dir, ".iopath-tree")); err != nil || !strings.Contains(string(m), want) {
		if _, err := gen.Tree(context.Background(), dir, gen.TreeOptions{Files: n, Size: gen.FixedSize(4096)}); err != nil {
			b.Fatal(err)
		}
	}
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() && d.Name() != ".iopath-tree" {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	if len(files) != n {
		b.Fatalf("%s holds %d files, want %d", dir, len(files), n)
	}
	return dir, files
}

// candidate is one fixed way to read a workload.
type candidate struct {
	engine      string
	workers, qd int
	blockSize   int
	choice      bool // from Decide
	// into, when set, reads the file itself instead of an engine: a
	// reference row, not a candidate Auto could choose.
	into           func(path string, workers int) error
	name           string
	perOp, elapsed float64
}

func fixed(engine string, workers, qd int) candidate {
	return candidate{engine: engine, workers: workers, qd: qd}
}

func (c *candidate) label() string {
	if c.choice {
		return "auto"
	}
	if c.into != nil {
		return fmt.Sprintf("ref-%s-w%d", c.engine, c.workers)
	}
	s := fmt.Sprintf("%s-w%d", c.engine, c.workers)
	if c.qd > 0 {
		s += fmt.Sprintf("-qd%d", c.qd)
	}
	if c.blockSize > 0 {
		s += fmt.Sprintf("-bs%dk", c.blockSize>>10)
	}
	return s
}

func choiceLabel(c Choice) string {
	s := fmt.Sprintf("%s-w%d", c.Engine, c.Workers)
	if c.QueueDepth > 0 {
		s += fmt.Sprintf("-qd%d", c.QueueDepth)
	}
	if c.BlockSize > 0 {
		s += fmt.Sprintf("-bs%dk", c.BlockSize>>10)
	}
	return s + " (rule " + c.Rule + ")"
}

// dedupe drops candidates with the same label (GOMAXPROCS 1 makes w1 and
// wN the same).
func dedupe(cs []candidate) []candidate {
	seen := map[string]bool{}
	var out []candidate
	for _, c := range cs {
		if !seen[c.label()] {
			seen[c.label()] = true
			out = append(out, c)
		}
	}
	return out
}

// order shuffles the candidates: on a shared machine the first and the
// last sub-benchmarks of a process see different conditions (the cache
// just warmed, other processes' bursts), and over several runs a random
// order spreads that over all of them. IOPATH_BENCH_SEED=n repeats an
// order; IOPATH_BENCH_SEED=0 keeps the table's (Auto first).
func order(b *testing.B, cs []candidate) []candidate {
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("IOPATH_BENCH_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			b.Fatalf("IOPATH_BENCH_SEED=%q: %v", v, err)
		}
		if n == 0 {
			return cs
		}
		seed = n
	}
	r := rand.New(rand.NewPCG(seed, seed))
	r.Shuffle(len(cs), func(i, j int) { cs[i], cs[j] = cs[j], cs[i] })
	b.Logf("order (IOPATH_BENCH_SEED=%d): %s", seed, labels(cs))
	return cs
}

func labels(cs []candidate) string {
	var s []string
	for i := range cs {
		s = append(s, cs[i].label())
	}
	return strings.Join(s, " ")
}

// cpuTime adds up the process's user and system CPU (io_uring's kernel
// workers are threads of the process, so theirs is in it) over the
// measured ops: on a busy machine CPU per GiB is steadier than GiB/s.
type cpuTime struct {
	total time.Duration
	at    time.Duration
}

func processCPU() time.Duration {
	var ru sys.Rusage
	if err := sys.Getrusage(sys.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func (c *cpuTime) start() { c.at = processCPU() }
func (c *cpuTime) stop()  { c.total += processCPU() - c.at }

// lineSums are per-worker sums, padded so that workers do not share a
// cache line.
type lineSums [engine.MaxWorkers]struct {
	v uint64
	_ [56]byte
}

// touchLines reads one word of every 64-byte line of b: a cheap consumer
// that still makes every engine bring all of the data to the CPU (so mmap
// cannot win by not reading).
func touchLines(b []byte) uint64 {
	var s uint64
	for i := 0; i+8 <= len(b); i += 64 {
		s += binary.LittleEndian.Uint64(b[i:])
	}
	return s
}

// fileBench is a one-file workload.
type fileBench struct {
	w       Workload
	pattern engine.Pattern
	bs      int
	cold    bool
	sink    func(size int64) engine.Sink
}

// blocksSink is Scan's consumer: it reads every cache line of each block.
func blocksSink(int64) engine.Sink {
	var sums lineSums
	return engine.SinkFunc(func(w int, _ int64, b []byte) error {
		sums[w].v += touchLines(b)
		return nil
	})
}

// positionedSink is ReadAt's: it copies each block into the worker's
// buffer, as a ReadAt into the caller's slice does.
func positionedSink(int64) engine.Sink {
	bufs := make([][]byte, engine.MaxWorkers)
	return engine.SinkFunc(func(w int, _ int64, b []byte) error {
		if len(bufs[w]) < len(b) {
			bufs[w] = make([]byte, len(b))
		}
		copy(bufs[w], b)
		return nil
	})
}

// runFile benchmarks the candidates on one file and logs the comparison.
func runFile(b *testing.B, fb fileBench, cands []candidate) {
	path := fb.w.Path
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	size := st.Size()
	cands = order(b, dedupe(append([]candidate{{choice: true}}, cands...)))
	prepared := map[string]engine.Prepared{}
	defer func() {
		for _, p := range prepared {
			p.Close()
		}
	}()
	prepare := func(b *testing.B, engineName string, workers, qd, bs int) engine.Prepared {
		key := fmt.Sprint(engineName, workers, qd, bs)
		if p := prepared[key]; p != nil {
			return p
		}
		e, err := engine.Lookup(engineName)
		if err != nil {
			b.Fatal(err)
		}
		if bs == 0 {
			bs = fb.bs
		}
		p, err := e.Prepare(engine.Job{Path: path, Pattern: fb.pattern, BlockSize: bs, Workers: workers, QueueDepth: qd, Direct: fb.w.Direct})
		if errors.Is(err, engine.ErrNotSupported) {
			b.Skip(err)
		}
		if err != nil {
			b.Fatal(err)
		}
		prepared[key] = p
		return p
	}
	ctx := context.Background()
	if !fb.cold {
		warm(b, path)
	}
	for i := range cands {
		c := &cands[i]
		b.Run(c.label(), func(b *testing.B) {
			sink := fb.sink(size)
			var choice Choice
			var cpu cpuTime
			b.SetBytes(size)
			b.ResetTimer()
			for range b.N {
				if fb.cold {
					b.StopTimer()
					drop(b, path, 0, 0)
					if r, err := Residency(path, size); err != nil || r > 0.05 {
						b.Fatalf("after DONTNEED residency is %.3f (%v)", r, err)
					}
					b.StartTimer()
				}
				cpu.start()
				if c.into != nil {
					if err := c.into(path, c.workers); err != nil {
						b.Fatal(err)
					}
					cpu.stop()
					continue
				}
				var p engine.Prepared
				if c.choice {
					choice = Decide(fb.w, realEngines())
					b.StopTimer()
					p = prepare(b, choice.Engine, choice.Workers, choice.QueueDepth, choice.BlockSize)
					b.StartTimer()
				} else {
					p = prepare(b, c.engine, c.workers, c.qd, c.blockSize)
				}
				st, err := p.Run(ctx, sink)
				if err != nil {
					b.Fatal(err)
				}
				cpu.stop()
				if got := st.Total().Bytes; got != size {
					b.Fatalf("read %d bytes, want %d", got, size)
				}
			}
			b.StopTimer()
			c.elapsed = b.Elapsed().Seconds()
			c.perOp = float64(size) * float64(b.N) / c.elapsed / (1 << 30)
			b.ReportMetric(c.perOp, "GiB/s")
			b.ReportMetric(cpu.total.Seconds()/(float64(size)*float64(b.N)/(1<<30)), "cpu-s/GiB")
			if c.choice {
				c.name = choiceLabel(choice)
			}
		})
	}
	summarize(b, cands, "GiB/s")
}

// warm reads path once so that it is in the page cache.
func warm(b *testing.B, path string) {
	b.Helper()
	e, _ := engine.Lookup("pread")
	p, err := e.Prepare(engine.Job{Path: path})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Run(context.Background(), engine.SinkFunc(func(int, int64, []byte) error { return nil })); err != nil {
		b.Fatal(err)
	}
	if r, err := Residency(path, 0); err != nil || r < 0.95 {
		b.Logf("warm: %s is only %.3f resident after a read (%v)", path, r, err)
	}
}

// summarize logs Auto's choice, the best fixed candidate and their ratio.
func summarize(b *testing.B, cands []candidate, unit string) {
	var auto, best *candidate
	for i := range cands {
		c := &cands[i]
		if c.elapsed == 0 {
			continue
		}
		if c.choice {
			auto = c
		} else if c.into == nil && (best == nil || c.perOp > best.perOp) {
			best = c
		}
	}
	if auto == nil || best == nil {
		return
	}
	b.Logf("auto chose %s: %.3g %s; best fixed %s: %.3g %s; auto/best = %.2f",
		auto.name, auto.perOp, unit, best.label(), best.perOp, unit, auto.perOp/best.perOp)
}

// BenchmarkBigWarm is Scan of a big cached file.
func BenchmarkBigWarm(b *testing.B) {
	size := int64(256 << 20)
	if benchFull() {
		size = 1 << 30
	}
	path := benchFile(b, size)
	runFile(b, fileBench{w: Workload{Kind: Blocks, Path: path, Resident: -1}, bs: engine.DefaultBlockSize, sink: blocksSink}, seqCandidates())
}

// BenchmarkWholeWarm is ReadFile of a big cached file: each block is
// copied into one buffer of the file's size, as ReadFile must do with
// blocks an engine hands it.
func BenchmarkWholeWarm(b *testing.B) {
	size := int64(256 << 20)
	if benchFull() {
		size = 1 << 30
	}
	path := benchFile(b, size)
	g := runtime.GOMAXPROCS(0)
	// 16 bytes past a page, as iopath.ReadFile's buffer (docs/engines.md:
	// the kernel's copy into a page-aligned buffer is 10-15% slower).
	dst := make([]byte, size+16)[16:]
	for i := 0; i < len(dst); i += 4096 {
		dst[i] = 1
	}
	// The reference: what iopath.ReadFile does with pread, workers reading
	// their share straight into the result, no engine buffer between.
	into := func(path string, workers int) error { return preadInto(path, dst, workers) }
	cands := append(seqCandidates(), candidate{engine: "pread-into-result", workers: 1, into: into},
		candidate{engine: "pread-into-result", workers: g, into: into})
	runFile(b, fileBench{w: Workload{Kind: WholeFile, Path: path, Resident: -1}, bs: engine.DefaultBlockSize, sink: copySink}, cands)
}

// preadInto reads path into dst with workers goroutines, each preading
// its contiguous share in 128 KiB calls.
func preadInto(path string, dst []byte, workers int) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	share := (len(dst) + workers - 1) / workers
	errs := make(chan error, workers)
	for w := range workers {
		go func() {
			lo, hi := min(w*share, len(dst)), min((w+1)*share, len(dst))
			for off := lo; off < hi; {
				n, err := f.ReadAt(dst[off:min(off+engine.DefaultBlockSize, hi)], int64(off))
				if err != nil {
					errs <- err
					return
				}
				off += n
			}
			errs <- nil
		}()
	}
	var first error
	for range workers {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// copySink is ReadFile's consumer: it copies each block to its place in
// a buffer of the file's size.
func copySink(size int64) engine.Sink {
	dst := make([]byte, size)
	for i := 0; i < len(dst); i += 4096 {
		dst[i] = 1 // fault it in now, outside the timer
	}
	return engine.SinkFunc(func(_ int, off int64, b []byte) error {
		copy(dst[off:], b)
		return nil
	})
}

// BenchmarkSizes reads cached files of growing size through one and
// GOMAXPROCS workers of pread and mmap, with Scan's and ReadFile's
// consumers: where parallel workers and mmap start to pay (the
// small-file rule's threshold).
func BenchmarkSizes(b *testing.B) {
	dir := b.TempDir()
	g := runtime.GOMAXPROCS(0)
	for _, size := range []int{64 << 10, 256 << 10, 512 << 10, 1 << 20, 2 << 20, 4 << 20, 16 << 20} {
		path := writeFile(b, dir, fmt.Sprintf("f%d", size), size)
		for _, kind := range []struct {
			name string
			k    Kind
			sink func(int64) engine.Sink
		}{{"blocks", Blocks, blocksSink}, {"whole", WholeFile, copySink}} {
			b.Run(fmt.Sprintf("%s-%dk", kind.name, size>>10), func(b *testing.B) {
				runFile(b, fileBench{w: Workload{Kind: kind.k, Path: path, Resident: -1}, bs: engine.DefaultBlockSize, sink: kind.sink},
					[]candidate{fixed("pread", 1, 0), fixed("pread", g, 0), fixed("mmap", 1, 0), fixed("mmap", g, 0)})
			})
		}
	}
}

// BenchmarkBigCold is Scan of a big file not in the page cache.
func BenchmarkBigCold(b *testing.B) {
	size := int64(256 << 20)
	if benchFull() {
		size = 1 << 30
	}
	path := benchFile(b, size)
	runFile(b, fileBench{w: Workload{Kind: Blocks, Path: path, Resident: -1}, bs: engine.DefaultBlockSize, cold: true, sink: blocksSink}, seqCandidates())
}

func seqCandidates() []candidate {
	g := runtime.GOMAXPROCS(0)
	return []candidate{
		fixed("read", 1, 0), fixed("pread", 1, 0), fixed("pread", g, 0), fixed("readv", 1, 0), fixed("readv", g, 0),
		fixed("mmap", 1, 0), fixed("mmap", g, 0), fixed("io_uring", 1, 32), fixed("io_uring", g, 32),
	}
}

// BenchmarkRandWarm is random 4 KiB positioned reads of a cached file,
// every block once.
func BenchmarkRandWarm(b *testing.B) {
	size := int64(256 << 20)
	if benchFull() {
		size = 1 << 30
	}
	path := benchFile(b, size)
	runFile(b, fileBench{w: Workload{Kind: Positioned, Path: path, Resident: -1}, pattern: engine.Random, bs: 4096, sink: positionedSink}, randCandidates())
}

// BenchmarkRandCold is random 4 KiB positioned reads of a file not in the
// page cache, every block once (a smaller file: a cold 4 KiB read costs
// ~0.1 ms).
func BenchmarkRandCold(b *testing.B) {
	size := int64(64 << 20)
	if benchFull() {
		size = 256 << 20
	}
	path := benchFile(b, size)
	runFile(b, fileBench{w: Workload{Kind: Positioned, Path: path, Resident: -1}, pattern: engine.Random, bs: 4096, cold: true, sink: positionedSink}, randCandidates())
}

func randCandidates() []candidate {
	g := runtime.GOMAXPROCS(0)
	return []candidate{
		fixed("pread", 1, 0), fixed("pread", g, 0), fixed("pread", 8, 0), fixed("mmap", 1, 0), fixed("mmap", g, 0),
		fixed("io_uring", 1, 32), fixed("io_uring", g, 32),
	}
}

// treeBench is a many-files workload.
type treeBench struct {
	dir   string
	files []string
	cold  bool
}

func runTree(b *testing.B, tb treeBench, cands []candidate) {
	cands = order(b, dedupe(append([]candidate{{choice: true}}, cands...)))
	ctx := context.Background()
	w := Workload{Kind: ManyFiles, Paths: []string{tb.dir}, Resident: -1}
	n := int64(len(tb.files))
	if !tb.cold {
		readTree(b, ctx, "raw", 2, 0, tb.dir, n)
	}
	for i := range cands {
		c := &cands[i]
		b.Run(c.label(), func(b *testing.B) {
			var choice Choice
			var cpu cpuTime
			b.ResetTimer()
			for range b.N {
				if tb.cold {
					b.StopTimer()
					dropTree(b, tb.files)
					b.StartTimer()
				}
				cpu.start()
				if c.choice {
					choice = Decide(w, realEngines())
					readTree(b, ctx, choice.Engine, choice.Workers, choice.QueueDepth, tb.dir, n)
				} else {
					readTree(b, ctx, c.engine, c.workers, c.qd, tb.dir, n)
				}
				cpu.stop()
			}
			b.StopTimer()
			c.elapsed = b.Elapsed().Seconds()
			c.perOp = float64(n) * float64(b.N) / c.elapsed
			b.ReportMetric(c.perOp, "files/s")
			b.ReportMetric(float64(cpu.total.Microseconds())/float64(n*int64(b.N)), "cpu-µs/file")
			if c.choice {
				c.name = choiceLabel(choice)
			}
		})
	}
	summarize(b, cands, "files/s")
}

var nopFile = func(*batch.File) error { return nil }

func readTree(b *testing.B, ctx context.Context, name string, workers, depth int, dir string, want int64) {
	e, err := batch.Lookup(name)
	if err != nil {
		b.Fatal(err)
	}
	st, err := batch.Read(ctx, e, batch.Job{Paths: []string{dir}, Workers: workers, Depth: depth}, nopFile)
	if errors.Is(err, batch.ErrNotSupported) {
		b.Skip(err)
	}
	if err != nil {
		b.Fatal(err)
	}
	// The tree's marker file is read too.
	if st.Errors != 0 || st.Files != want+1 {
		b.Fatalf("%s: %d files, %d errors; want %d files", name, st.Files, st.Errors, want+1)
	}
}

// dropTree drops every file's pages (the directories stay cached, as in
// iopath bench --tree) and checks a sample.
func dropTree(b *testing.B, files []string) {
	b.Helper()
	var wg sync.WaitGroup
	const parts = 4
	for k := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := k; i < len(files); i += parts {
				drop(b, files[i], 0, 0)
			}
		}()
	}
	wg.Wait()
	if s := sampleFiles(files); s.resident > 0.05 {
		b.Fatalf("after DONTNEED %.3f of a sample of the files is resident", s.resident)
	}
}

// BenchmarkManyWarm is ReadFiles of a tree of cached 4 KiB files.
func BenchmarkManyWarm(b *testing.B) {
	n := 10_000
	if benchFull() {
		n = 100_000
	}
	dir, files := benchTree(b, n)
	runTree(b, treeBench{dir: dir, files: files}, manyCandidates())
}

// BenchmarkManyCold is ReadFiles of a tree of 4 KiB files whose data is
// not cached (their directories and inodes are).
func BenchmarkManyCold(b *testing.B) {
	n := 10_000
	if benchFull() {
		n = 100_000
	}
	dir, files := benchTree(b, n)
	runTree(b, treeBench{dir: dir, files: files, cold: true}, manyCandidates())
}

func manyCandidates() []candidate {
	g := runtime.GOMAXPROCS(0)
	return []candidate{
		fixed("readfile", 1, 0), fixed("pool", poolWorkers, 0), fixed("raw", 1, 0), fixed("raw", g, 0),
		fixed("io_uring", 1, 64), fixed("io_uring", g, 64),
	}
}

// BenchmarkDecide measures what Decide itself costs: a big file, a random
// workload, and a many-files workload given as a directory and as a list.
func BenchmarkDecide(b *testing.B) {
	n := 10_000
	if benchFull() {
		n = 100_000
	}
	dir, files := benchTree(b, n)
	big := benchFile(b, 256<<20)
	for _, tc := range []struct {
		name string
		w    Workload
	}{
		{"big-file", Workload{Kind: Blocks, Path: big, Resident: -1}},
		{"positioned", Workload{Kind: Positioned, Path: big, Resident: -1}},
		{fmt.Sprintf("tree-%dk", n/1000), Workload{Kind: ManyFiles, Paths: []string{dir}, Resident: -1}},
		{fmt.Sprintf("list-%dk", n/1000), Workload{Kind: ManyFiles, Paths: files, Resident: -1}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			CurrentEnv(realEngines()) // the probe runs once per process; not Decide's cost
			var times []time.Duration
			for b.Loop() {
				t := time.Now()
				Decide(tc.w, realEngines())
				times = append(times, time.Since(t))
			}
			slices.Sort(times)
			b.ReportMetric(float64(times[len(times)/2].Nanoseconds())/1e3, "p50-µs")
			b.ReportMetric(float64(times[len(times)*99/100].Nanoseconds())/1e3, "p99-µs")
		})
	}
}
