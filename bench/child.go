package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/iopath/iopath/batch"
	"github.com/iopath/iopath/engine"
	"github.com/iopath/iopath/metrics"
)

// ChildEnv is the environment variable that makes a process a benchmark
// child: with IOPATH_BENCH_CHILD=1 the program must call ChildMain and exit.
const ChildEnv = "IOPATH_BENCH_CHILD"

// IsChild reports whether this process was started as a benchmark child.
func IsChild() bool { return os.Getenv(ChildEnv) == "1" }

// childRequest is what the runner sends a child on its stdin.
type childRequest struct {
	Engine  string     `json:"engine"`
	Job     engine.Job `json:"job"`
	Consume Consume    `json:"consume"`
	// MinTimeNs makes the child repeat passes over the file until the
	// measured phase has lasted this long (warm and direct runs only).
	MinTimeNs int64 `json:"min_time_ns"`
	// Profile, when set, is the file for a pprof CPU profile of the
	// measured phase: a temporary file the runner made beside the
	// profile's name, and renames into place when the run succeeded.
	Profile string `json:"profile,omitempty"`
	// Trace is the same for an execution trace (runtime/trace).
	Trace string `json:"trace,omitempty"`
	// Tree, when set, makes this a many-files run (bench --tree); Engine
	// and Job are then unused.
	Tree *treeRequest `json:"tree,omitempty"`
	// Write makes this a write run: Engine is a writer, the child writes
	// the file once and then verifies it.
	Write bool `json:"write,omitempty"`
	// Append, when set, makes this a durable-append run (bench
	// --append); Engine and Job are then unused.
	Append *appendRequest `json:"append,omitempty"`
}

// childResponse is what a child writes on its stdout.
type childResponse struct {
	Passes       int           `json:"passes"`
	Bytes        int64         `json:"bytes"`
	Blocks       int64         `json:"blocks"` // tree runs: files
	Errors       int64         `json:"errors,omitempty"`
	Syscalls     int64         `json:"syscalls"`
	WallNs       int64         `json:"wall_ns"`
	SetupNs      int64         `json:"setup_ns"`
	Usage        metrics.Usage `json:"usage"`
	IOThreadNs   int64         `json:"io_thread_ns"`
	Checksum     string        `json:"checksum"`
	Lat          [][2]int64    `json:"lat"`
	Notes        []string      `json:"notes,omitempty"`
	Error        string        `json:"error,omitempty"`
	NotSupported bool          `json:"not_supported,omitempty"`
	// Write runs: sync calls, their latency buckets, how the file was
	// verified, and whether the error is a verification mismatch.
	Syncs    int64      `json:"syncs,omitempty"`
	SyncLat  [][2]int64 `json:"sync_lat,omitempty"`
	Verified string     `json:"verified,omitempty"`
	Mismatch bool       `json:"mismatch,omitempty"`
	// Runtime is what the Go runtime did during the measured phase.
	Runtime *metrics.Runtime `json:"runtime,omitempty"`
}

// ChildMain runs one measurement as asked on stdin and writes the result on
// stdout. It returns an error only when it cannot speak the protocol; a
// failed measurement is reported inside the response.
func ChildMain(ctx context.Context, stdin io.Reader, stdout io.Writer) error {
	var req childRequest
	if err := json.NewDecoder(stdin).Decode(&req); err != nil {
		return fmt.Errorf("bench child: read request: %w", err)
	}
	resp := measure(ctx, &req)
	return json.NewEncoder(stdout).Encode(resp)
}

func measure(ctx context.Context, req *childRequest) *childResponse {
	resp := &childResponse{}
	if req.Tree != nil {
		return measureTree(ctx, req, resp)
	}
	if req.Append != nil {
		return measureAppend(ctx, req.Append, resp)
	}
	if req.Write {
		return measureWrite(ctx, req, resp)
	}
	fail := func(err error) *childResponse {
		resp.Error = err.Error()
		resp.NotSupported = isNotSupported(err)
		return resp
	}
	e, err := engine.Lookup(req.Engine)
	if err != nil {
		return fail(err)
	}
	t0 := time.Now()
	p, err := e.Prepare(req.Job)
	if err != nil {
		return fail(err)
	}
	defer p.Close()
	resp.SetupNs = int64(time.Since(t0))
	sink := newConsumer(req.Consume, req.Job.Workers)

	inst, err := startInstruments(req)
	if err != nil {
		return fail(err)
	}
	defer inst.stop()
	err = measurePasses(resp, time.Duration(req.MinTimeNs), req.Consume == Checksum, "file", func() (pass, error) {
		st, err := p.Run(ctx, sink)
		if err != nil {
			return pass{}, err
		}
		tot := st.Total()
		sum := sink.sum()
		sink.reset()
		return pass{bytes: tot.Bytes, items: tot.Blocks, syscalls: tot.Syscalls, lat: tot.Lat, notes: st.Notes, sum: sum}, nil
	})
	if err != nil {
		return fail(err)
	}
	if err := inst.finish(resp); err != nil {
		return fail(err)
	}
	return resp
}

// pass is what one pass over the data (a file or a tree) gave.
type pass struct {
	bytes, items, errors, syscalls int64
	lat                            *metrics.Histogram
	notes                          []string
	sum                            uint64
}

// measurePasses is the measured phase of a child, for one file and for a
// tree alike: it repeats run until minTime has passed (at least once),
// adds the passes up into resp, and takes the process's usage and its
// io_uring threads' CPU around them. With sameSum, every pass must give
// the first pass's checksum; what names the data in that error.
func measurePasses(resp *childResponse, minTime time.Duration, sameSum bool, what string, run func() (pass, error)) error {
	io0, _ := metrics.IOThreadCPU()
	u0, err := metrics.SelfUsage()
	if err != nil {
		return err
	}
	var lat *metrics.Histogram
	var first uint64
	t1 := time.Now()
	for {
		ps, err := run()
		if err != nil {
			return err
		}
		resp.Passes++
		resp.Bytes += ps.bytes
		resp.Blocks += ps.items
		resp.Errors += ps.errors
		resp.Syscalls += ps.syscalls
		if ps.lat != nil {
			if lat == nil {
				lat = ps.lat
			} else {
				lat.Merge(ps.lat)
			}
		}
		resp.Notes = ps.notes
		if resp.Passes == 1 {
			first = ps.sum
		} else if ps.sum != first && sameSum {
			return fmt.Errorf("checksum differs between passes over the same %s (%s, then %s): the data changed while read, or the engine is wrong", what, formatSum(first), formatSum(ps.sum))
		}
		if time.Since(t1) >= minTime {
			break
		}
	}
	wall := time.Since(t1)
	u1, err := metrics.SelfUsage()
	if err != nil {
		return err
	}
	if io1, err := metrics.IOThreadCPU(); err == nil {
		resp.IOThreadNs = int64(metrics.IOThreadDelta(io0, io1))
	}
	resp.WallNs = int64(wall)
	resp.Usage = u1.Sub(u0)
	resp.Checksum = formatSum(first)
	if lat != nil {
		resp.Lat = lat.Buckets()
	}
	return nil
}

// isNotSupported says err means the engine cannot run here at all.
func isNotSupported(err error) bool {
	return errors.Is(err, engine.ErrNotSupported) || errors.Is(err, batch.ErrNotSupported)
}
