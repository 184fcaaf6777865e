package filesrv

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/iopath/iopath/gen"
	"github.com/iopath/iopath/internal/stats"
)

// DefaultSizes are the file sizes `iopath net bench --serve-file` serves.
var DefaultSizes = []int64{4 << 10, 64 << 10, 1 << 20, 64 << 20}

// StartFunc starts a server for one run and returns its address and a
// function that stops it and returns its error. `iopath net bench` passes
// one that runs Serve in a child process.
type StartFunc func(ctx context.Context, sc ServerConfig) (addr string, stop func() error, err error)

// BenchConfig says what Bench measures. The zero value measures every
// method on DefaultSizes, three rounds of one second each, with the
// server in this process.
type BenchConfig struct {
	// Dir is where the files are written, in a new directory removed
	// afterwards ("": the system's temporary directory).
	Dir     string
	Sizes   []int64  // default DefaultSizes
	Methods []string // default Methods()
	Rounds  int      // runs of each (method, size) (default 3)
	// Duration bounds each run (default 1s); with Count > 0 each
	// connection makes Count requests instead.
	Duration time.Duration
	Count    int
	Conns    int // connections per run (default 1)
	Chunk    int // ServerConfig.Chunk
	Depth    int // ServerConfig.Depth
	// Start starts each run's server; nil: Run's in-process server.
	Start StartFunc
	// Progress, when set, is called after each run with its result.
	Progress func(Result)
}

// Bench writes a file of each size (pseudo-random, package gen), then
// measures every (method, size) Rounds times, interleaved: each round
// runs every size, and for each size every method in turn (A B C D, A B
// C D, ...), so that a machine that slows down mid-way hurts every method
// alike. It returns every run's Result (Median reduces them); a run that
// fails has Err set. Bench's error is a setup failure, ctx's, or the
// joined failures of runs other than unsupported methods.
func Bench(ctx context.Context, bc BenchConfig) ([]Result, error) {
	if len(bc.Sizes) == 0 {
		bc.Sizes = DefaultSizes
	}
	if len(bc.Methods) == 0 {
		bc.Methods = Methods()
	}
	if bc.Rounds == 0 {
		bc.Rounds = 3
	}
	if bc.Duration == 0 && bc.Count == 0 {
		bc.Duration = time.Second
	}
	for _, m := range bc.Methods {
		if !slices.Contains(methods, m) {
			return nil, fmt.Errorf("filesrv: unknown method %q (want one of %v)", m, methods)
		}
	}
	for _, s := range bc.Sizes {
		if s < 0 {
			return nil, fmt.Errorf("filesrv: file size %d: want 0 or more", s)
		}
	}
	if bc.Rounds < 0 {
		return nil, fmt.Errorf("filesrv: rounds %d: want at least 1", bc.Rounds)
	}
	dir, err := os.MkdirTemp(bc.Dir, "iopath-filesrv-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	paths := make([]string, len(bc.Sizes))
	for i, size := range bc.Sizes {
		paths[i] = filepath.Join(dir, fmt.Sprintf("file-%d", size))
		if err := gen.File(ctx, paths[i], size, gen.Options{Seed: uint64(size) + 1}); err != nil {
			return nil, err
		}
	}

	var out []Result
	var errs []error
	for range bc.Rounds {
		for i, size := range bc.Sizes {
			for _, m := range bc.Methods {
				if err := ctx.Err(); err != nil {
					return out, err
				}
				r, err := benchRun(ctx, bc, paths[i], m)
				if err != nil {
					if ctx.Err() != nil {
						return out, ctx.Err()
					}
					r = Result{Method: m, FileSize: size, Conns: max(bc.Conns, 1), Runs: 1, Err: err.Error(),
						Chunk: cmp.Or(bc.Chunk, DefaultChunk), Depth: cmp.Or(bc.Depth, DefaultDepth), InProcess: bc.Start == nil}
					if !errors.Is(err, ErrNotSupported) {
						errs = append(errs, fmt.Errorf("%s, %d bytes: %w", m, size, err))
					}
				}
				if bc.Progress != nil {
					bc.Progress(r)
				}
				out = append(out, r)
			}
		}
	}
	return out, errors.Join(errs...)
}

// benchRun is one run of Bench.
func benchRun(ctx context.Context, bc BenchConfig, path, method string) (Result, error) {
	cfg := Config{Path: path, Method: method, Conns: bc.Conns, Duration: bc.Duration, Count: bc.Count,
		Chunk: bc.Chunk, Depth: bc.Depth}
	if bc.Count > 0 {
		cfg.Duration = 0
	}
	if bc.Start != nil {
		addr, stop, err := bc.Start(ctx, ServerConfig{Path: path, Method: method, Chunk: bc.Chunk, Depth: bc.Depth})
		if err != nil {
			return Result{}, err
		}
		cfg.Addr = addr
		r, err := Run(ctx, cfg)
		if serr := stop(); serr != nil {
			err = errors.Join(serr, err)
		}
		if r == nil {
			return Result{}, err
		}
		return *r, err
	}
	r, err := Run(ctx, cfg)
	if r == nil {
		return Result{}, err
	}
	return *r, err
}

// Median reduces rs to one Result per (method, file size, conns, chunk,
// depth, in process), in the order of first appearance: the median of
// each rate over the runs that succeeded, the min and max of GB/s and
// CPU-s/GB, and the totals (responses, bytes, CPU, system calls,
// corrupted bytes). A group whose runs all failed keeps the first
// failure; one where some failed notes how many in Err and is not
// Verified.
func Median(rs []Result) []Result {
	type key struct {
		method              string
		size                int64
		conns, chunk, depth int
		inProcess           bool
	}
	var order []key
	groups := map[key][]Result{}
	for _, r := range rs {
		k := key{r.Method, r.FileSize, r.Conns, r.Chunk, r.Depth, r.InProcess}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	out := make([]Result, 0, len(order))
	for _, k := range order {
		g := groups[k]
		var ok []Result
		var firstErr string
		for _, r := range g {
			if r.Err == "" {
				ok = append(ok, r)
			} else if firstErr == "" {
				firstErr = r.Err
			}
		}
		if len(ok) == 0 {
			m := g[0]
			m.Runs = len(g)
			m.Verified = false
			out = append(out, m)
			continue
		}
		m := ok[0]
		m.Runs = len(ok)
		m.Responses, m.Bytes, m.Elapsed, m.ServerCPU, m.IOThreadCPU, m.ProcessCPU, m.Syscalls, m.SyscallRetries, m.Corrupted = 0, 0, 0, 0, 0, 0, 0, 0, 0
		m.Verified = true
		var gbps, cpu, pcpu, spm, spr []float64
		for _, r := range ok {
			m.Responses += r.Responses
			m.Bytes += r.Bytes
			m.Elapsed += r.Elapsed
			m.ServerCPU += r.ServerCPU
			m.IOThreadCPU += r.IOThreadCPU
			m.ProcessCPU += r.ProcessCPU
			m.Syscalls += r.Syscalls
			m.SyscallRetries += r.SyscallRetries
			m.Corrupted += r.Corrupted
			m.Verified = m.Verified && r.Verified
			gbps = append(gbps, r.GBps)
			cpu = append(cpu, r.CPUSecPerGB)
			pcpu = append(pcpu, r.ProcCPUSecPerGB)
			spm = append(spm, r.SyscallsPerMB)
			spr = append(spr, r.SyscallsPerResp)
		}
		m.GBps, m.CPUSecPerGB, m.ProcCPUSecPerGB = stats.Median(gbps), stats.Median(cpu), stats.Median(pcpu)
		m.SyscallsPerMB, m.SyscallsPerResp = stats.Median(spm), stats.Median(spr)
		m.GBpsMin, m.GBpsMax = stats.MinMax(gbps)
		m.CPUSecPerGBMin, m.CPUSecPerGBMax = stats.MinMax(cpu)
		if len(ok) < len(g) {
			m.Err = fmt.Sprintf("%d of %d runs failed: %s", len(g)-len(ok), len(g), firstErr)
			m.Verified = false
		}
		out = append(out, m)
	}
	return out
}
