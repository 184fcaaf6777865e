package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

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
}

// childResponse is what a child writes on its stdout.
type childResponse struct {
	Bytes        int64         `json:"bytes"`
	Blocks       int64         `json:"blocks"`
	Syscalls     int64         `json:"syscalls"`
	WallNs       int64         `json:"wall_ns"`
	SetupNs      int64         `json:"setup_ns"`
	Usage        metrics.Usage `json:"usage"`
	Checksum     string        `json:"checksum"`
	Lat          [][2]int64    `json:"lat"`
	Notes        []string      `json:"notes,omitempty"`
	Error        string        `json:"error,omitempty"`
	NotSupported bool          `json:"not_supported,omitempty"`
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
	fail := func(err error) *childResponse {
		resp.Error = err.Error()
		resp.NotSupported = errors.Is(err, engine.ErrNotSupported)
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

	u0, err := metrics.SelfUsage()
	if err != nil {
		return fail(err)
	}
	t1 := time.Now()
	st, err := p.Run(ctx, sink)
	wall := time.Since(t1)
	u1, uerr := metrics.SelfUsage()
	if err != nil {
		return fail(err)
	}
	if uerr != nil {
		return fail(uerr)
	}
	tot := st.Total()
	resp.Bytes, resp.Blocks, resp.Syscalls = tot.Bytes, tot.Blocks, tot.Syscalls
	resp.WallNs = int64(wall)
	resp.Usage = u1.Sub(u0)
	resp.Checksum = formatSum(sink.sum())
	if tot.Lat != nil {
		resp.Lat = tot.Lat.Buckets()
	}
	resp.Notes = st.Notes
	return resp
}
