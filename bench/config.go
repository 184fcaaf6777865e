package bench

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/iopath/iopath/engine"
	"github.com/iopath/iopath/fio"
)

// Cache is the page-cache state a run starts in.
type Cache string

// Cache states.
const (
	Warm   Cache = "warm"   // the whole file resident before the run
	Cold   Cache = "cold"   // none of the file resident before the run
	Direct Cache = "direct" // O_DIRECT: the page cache is bypassed
)

// ParseCache accepts warm, cold and direct.
func ParseCache(s string) (Cache, error) {
	switch c := Cache(strings.ToLower(strings.TrimSpace(s))); c {
	case Warm, Cold, Direct:
		return c, nil
	}
	return "", fmt.Errorf("unknown cache state %q (want warm, cold or direct)", s)
}

// Consume is what the consumer does with each block it is handed.
type Consume string

// Consumers.
const (
	// Checksum reads every byte (xxh3), so that mmap cannot win by not
	// touching data, and proves the bytes are right.
	Checksum Consume = "checksum"
	// None reads nothing further: fio's semantics. mmap copies each block
	// into a buffer, as fio's mmap engine does.
	None Consume = "none"
	// Touch reads one byte per page.
	Touch Consume = "touch"
)

// ParseConsume accepts checksum, none and touch.
func ParseConsume(s string) (Consume, error) {
	switch c := Consume(strings.ToLower(strings.TrimSpace(s))); c {
	case Checksum, None, Touch:
		return c, nil
	}
	return "", fmt.Errorf("unknown consumer %q (want checksum, none or touch)", s)
}

// Config is one benchmark: a file, a workload and the engines to compare.
type Config struct {
	Path    string   // the file to read (must exist)
	Engines []string // engine names, in table order
	Caches  []Cache  // cache states, each a table section
	Runs    int      // runs per (engine, cache), each in its own child process

	Pattern engine.Pattern
	// Write makes the benchmark write the file instead of reading it,
	// with the write engines (engine.Writer) and Pattern Sequential,
	// Random or Append. Path must be a file made for the benchmark (its
	// content is overwritten; Append empties it before each run). Every
	// write run makes one pass over the file (MinTime does not apply),
	// and the child reads the file back from the device after it and
	// checks every block (internal/wdata).
	Write bool
	// Sync is the write runs' durability discipline.
	Sync engine.Sync
	// BlockSizes, Workers and QueueDepths are swept: every combination is
	// a point of the matrix, and every point gets its own interleaved
	// runs. Empty means the engine package's default. Engines without a
	// queue (Caps.Queue false) run once per block size and worker count,
	// not once per queue depth.
	BlockSizes  []int
	Workers     []int
	QueueDepths []int
	Vectors     int
	SQPoll      bool
	Consume     Consume
	NoLatency   bool // do not record per-block latency (to measure its cost)
	// MinTime makes each warm or direct run repeat passes over the file
	// until it has measured this long, so that short files still give
	// steady figures. Cold runs always make one pass.
	MinTime time.Duration

	// Fio, when set, runs each engine's fio twin (see package fio) beside
	// it, interleaved with the iopath runs. It needs Consume None.
	Fio *fio.Info
	// ProfileDir, when set, makes every iopath run write a pprof CPU
	// profile of its measured phase into this directory (created when
	// missing); PerfDir a perf recording of it, kernel frames included, as
	// a pprof profile (.pb.gz), and a breakdown of its CPU into the
	// report (Run.Perf: perf must be usable, perf.Probe); TraceDir an
	// execution trace (go tool trace). The files are named as RunFiles
	// lists; each is written to a temporary file beside its name and
	// renamed into place when its run succeeded. Measure refuses to start
	// when one of the names exists, unless ProfileReplace is set.
	ProfileDir     string
	PerfDir        string
	TraceDir       string
	ProfileReplace bool
	// PerfFreq is perf's sampling frequency, Hz; 0 is perf.DefaultFreq.
	PerfFreq int
	// TrackTemp, when set, is told each temporary file the runner makes
	// (a profile being written) and returns the function that forgets it
	// again: a caller that can be stopped at once removes what is still
	// tracked then. TrackTempDir is the same for a temporary directory
	// (a perf recording's).
	TrackTemp    func(path string) (forget func())
	TrackTempDir func(dir string) (forget func())

	// Command is the command line recorded in the report.
	Command string
	// Version is iopath's version, recorded in the machine block.
	Version string
	// TempFile says that Path was created for this benchmark.
	TempFile bool

	// ChildCommand starts a child: argv, to which the runner adds the
	// environment IOPATH_BENCH_CHILD=1. Default: this executable.
	ChildCommand []string

	// Progress, when set, is called before each run and once at the end
	// with done == total.
	Progress func(done, total int, what string)
}

// DefaultEngines are the engines `iopath bench` compares when none are named.
func DefaultEngines() []string {
	var names []string
	for _, n := range engine.Names() {
		if n != "null" {
			names = append(names, n)
		}
	}
	return names
}

// DefaultWriteEngines are the engines `iopath bench --rw write` compares
// when none are named.
func DefaultWriteEngines() []string { return engine.WriterNames() }

func (c *Config) setDefaults() {
	if len(c.Engines) == 0 {
		c.Engines = DefaultEngines()
		if c.Write {
			c.Engines = DefaultWriteEngines()
		}
	}
	if len(c.Caches) == 0 {
		c.Caches = []Cache{Warm, Cold}
		switch {
		case c.Write && c.Sync.Mode == engine.SyncDirect:
			c.Caches = []Cache{Direct}
		case c.Write:
			c.Caches = []Cache{Warm}
		}
	}
	if c.Runs == 0 {
		c.Runs = 3
	}
	if c.Consume == "" {
		c.Consume = Checksum
	}
	def := engine.Job{}.WithDefaults()
	if len(c.BlockSizes) == 0 {
		c.BlockSizes = []int{def.BlockSize}
	}
	if len(c.Workers) == 0 {
		c.Workers = []int{def.Workers}
	}
	if len(c.QueueDepths) == 0 {
		c.QueueDepths = []int{def.QueueDepth}
	}
}

func (c *Config) outputs() *outputs {
	return &outputs{profileDir: c.ProfileDir, perfDir: c.PerfDir, traceDir: c.TraceDir, replace: c.ProfileReplace,
		track: c.TrackTemp, trackDir: c.TrackTempDir, perfFreq: c.PerfFreq}
}

// runNames lists the base names of the runs of each iopath row that can
// run, in the order they are made.
func (c *Config) runNames() []string {
	plain := *c
	plain.Fio = nil // fio rows write no profile
	m := &measurement{cfg: &plain}
	var out []string
	for _, cache := range c.Caches {
		for _, p := range c.points() {
			rows := m.rows(cache, p)
			for n := range c.Runs {
				for _, r := range rows {
					if !r.skip {
						out = append(out, runName(r.res, n))
					}
				}
			}
		}
	}
	return out
}

// RunFiles lists the files a Measure of c writes with ProfileDir, PerfDir
// or TraceDir set, one of each per run of each iopath row that can run
// (in the order they are written). Call it after Validate.
func (c *Config) RunFiles() []string { return c.outputs().files(c.runNames()) }

// MaxPoints bounds the size of a sweep.
const MaxPoints = 1000

// MaxRuns bounds Config.Runs.
const MaxRuns = 1000

// point is one combination of the swept parameters.
type point struct{ bs, workers, qd int }

// points lists the matrix in sweep order: block size outermost, queue depth
// innermost.
func (c *Config) points() []point {
	var ps []point
	for _, bs := range c.BlockSizes {
		for _, w := range c.Workers {
			for _, qd := range c.QueueDepths {
				ps = append(ps, point{bs, w, qd})
			}
		}
	}
	return ps
}

func (c *Config) job(cache Cache, p point) engine.Job {
	return engine.Job{
		Path:       c.Path,
		Pattern:    c.Pattern,
		BlockSize:  p.bs,
		Workers:    p.workers,
		QueueDepth: p.qd,
		Vectors:    c.Vectors,
		SQPoll:     c.SQPoll,
		Direct:     cache == Direct,
		Latency:    !c.NoLatency,
		CopyMapped: c.Consume == None && !c.Write,
		// Warm runs repeat passes: map once, as fio does. Cold runs make
		// one pass, and a kept mapping would pin the pages the runner
		// drops.
		KeepMapped: cache == Warm && !c.Write,
		Sync:       c.Sync,
	}.WithDefaults()
}

// lookup returns the engine called name: a writer's capabilities when
// the benchmark writes.
func (c *Config) lookup(name string) (engine.Caps, error) {
	if c.Write {
		w, err := engine.LookupWriter(name)
		if err != nil {
			return engine.Caps{}, err
		}
		return w.Caps(), nil
	}
	e, err := engine.Lookup(name)
	if err != nil {
		return engine.Caps{}, err
	}
	return e.Caps(), nil
}

// Validate checks the configuration before anything runs.
func (c *Config) Validate() error {
	c.setDefaults()
	if c.MinTime < 0 || c.MinTime > time.Hour {
		return fmt.Errorf("min time %v out of range [0, 1h]", c.MinTime)
	}
	if c.Runs < 1 || c.Runs > MaxRuns {
		return fmt.Errorf("runs %d out of range [1, %d]", c.Runs, MaxRuns)
	}
	switch {
	case !c.Write && c.Pattern == engine.Append:
		return fmt.Errorf("the append pattern writes: use it with Write (--rw append)")
	case !c.Write && c.Sync != (engine.Sync{}):
		return fmt.Errorf("sync %v applies to writes only (--rw write, randwrite or append)", c.Sync)
	case c.Write && c.Sync.Mode == engine.SyncDirect && slices.ContainsFunc(c.Caches, func(cs Cache) bool { return cs != Direct }):
		return fmt.Errorf("sync direct writes with O_DIRECT, which is cache state direct: drop the other cache states")
	}
	seen := map[string]bool{}
	for _, n := range c.Engines {
		if _, err := c.lookup(n); err != nil {
			return err
		}
		if seen[n] {
			return fmt.Errorf("engine %q named twice", n)
		}
		seen[n] = true
	}
	for _, l := range []struct {
		name string
		v    []int
	}{{"block size", c.BlockSizes}, {"workers", c.Workers}, {"queue depth", c.QueueDepths}} {
		seen := map[int]bool{}
		for _, v := range l.v {
			if v < 1 {
				return fmt.Errorf("%s %d: must be at least 1", l.name, v)
			}
			if seen[v] {
				return fmt.Errorf("%s %d named twice", l.name, v)
			}
			seen[v] = true
		}
	}
	if n := len(c.points()); n > MaxPoints {
		return fmt.Errorf("the sweep has %d points; at most %d", n, MaxPoints)
	}
	seenC := map[Cache]bool{}
	for _, cs := range c.Caches {
		if _, err := ParseCache(string(cs)); err != nil {
			return err
		}
		if seenC[cs] {
			return fmt.Errorf("cache state %q named twice", cs)
		}
		seenC[cs] = true
	}
	if _, err := ParseConsume(string(c.Consume)); err != nil {
		return err
	}
	if c.Fio != nil && c.Consume != None && !c.Write {
		return fmt.Errorf("fio twins need consume %q: fio does not look at the data, so a ratio against consume %q would compare different work", None, c.Consume)
	}
	for _, cs := range c.Caches {
		for _, p := range c.points() {
			j := c.job(cs, p)
			j.Path = "x" // checked when the file is opened
			if err := j.Validate(); err != nil {
				return err
			}
		}
	}
	return nil
}
