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
	"github.com/iopath/iopath/netio/netresult"
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
	Progress func(netresult.FileServe)
}

// Bench writes a file of each size (pseudo-random, package gen), then
// measures every (method, size) Rounds times, interleaved: each round
// runs every size, and for each size every method in turn (A B C D, A B
// C D, ...), so that a machine that slows down mid-way hurts every method
// alike. It returns every run's result (netresult.FileServeMedians
// reduces them); a run that fails has Err set. Bench's error is a setup failure, ctx's, or the
// joined failures of runs other than unsupported methods.
func Bench(ctx context.Context, bc BenchConfig) ([]netresult.FileServe, error) {
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

	var out []netresult.FileServe
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
					r = netresult.FileServe{Method: m, FileSize: size, Conns: max(bc.Conns, 1), Runs: 1, Err: err.Error(),
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
func benchRun(ctx context.Context, bc BenchConfig, path, method string) (netresult.FileServe, error) {
	cfg := Config{Path: path, Method: method, Conns: bc.Conns, Duration: bc.Duration, Count: bc.Count,
		Chunk: bc.Chunk, Depth: bc.Depth}
	if bc.Count > 0 {
		cfg.Duration = 0
	}
	if bc.Start != nil {
		addr, stop, err := bc.Start(ctx, ServerConfig{Path: path, Method: method, Chunk: bc.Chunk, Depth: bc.Depth})
		if err != nil {
			return netresult.FileServe{}, err
		}
		cfg.Addr = addr
		r, err := Run(ctx, cfg)
		if serr := stop(); serr != nil {
			err = errors.Join(serr, err)
		}
		if r == nil {
			return netresult.FileServe{}, err
		}
		return *r, err
	}
	r, err := Run(ctx, cfg)
	if r == nil {
		return netresult.FileServe{}, err
	}
	return *r, err
}
