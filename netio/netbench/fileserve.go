package netbench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"time"

	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/internal/units"
	"github.com/iopath/iopath/netio/filesrv"
	"github.com/iopath/iopath/netio/netresult"
)

// FileServeOptions say what FileServe runs. The zero value of a field
// takes the default.
type FileServeOptions struct {
	Sizes  []int64 // file sizes (default filesrv.DefaultSizes)
	Rounds int     // runs of each (method, size), interleaved (default 3)
	// Duration bounds each run (default 1 s).
	Duration time.Duration
	// Dir is where the files are written, in a directory of their own
	// removed afterwards ("": the system's temporary directory).
	Dir string
	// Command builds the command line of a server child: the iopath
	// binary with args (the CLI passes os.Executable). Required.
	Command func(args ...string) *exec.Cmd
	// Progress, when set, is told of each run as it ends.
	Progress func(done, total int, what string)
	// Log, when set, receives one line per notable event (a method
	// skipped).
	Log func(format string, args ...any)
}

// DefaultFileServeRounds is FileServeOptions.Rounds' default.
const DefaultFileServeRounds = 3

// FileServe runs `iopath net bench --serve-file`: every method of
// filesrv on every size, Rounds times interleaved, each server in a
// child process of its own pinned like the echo servers (FileServerStart)
// and the client in this process pinned to the other cores while it
// runs. io_uring is left out, with the reason in Skipped and a line to
// Log, when this kernel or process cannot use it: its child's refusal
// would read as a failure.
//
// The report holds the medians over the rounds with each round's
// figures (netresult.FileServeMedians), the configuration, the machine
// and the start time; the caller sets Command and
// Machine.IopathVersion. FileServe's error is a bad option, a setup
// failure, the failed runs (which the report holds too), or ctx's: then
// the report holds the rounds so far.
func FileServe(ctx context.Context, o FileServeOptions) (*netresult.FileServeReport, error) {
	if o.Command == nil {
		return nil, errors.New("netbench: no Command to start the file servers with")
	}
	sizes := o.Sizes
	if len(sizes) == 0 {
		sizes = filesrv.DefaultSizes
	}
	rounds := cmp.Or(o.Rounds, DefaultFileServeRounds)
	duration := cmp.Or(o.Duration, time.Second)
	logf := o.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	srvCPUs, cliCPUs, _ := Pinning()
	rep := &netresult.FileServeReport{
		SchemaVersion: netresult.FileServeSchemaVersion,
		Started:       time.Now().UTC(),
		Machine:       features.DescribeMachine("", ""),
	}
	methods := filesrv.Methods()
	if r := features.Probe(); !r.IOURing.Available {
		methods = slices.DeleteFunc(methods, func(m string) bool { return m == filesrv.IOURing })
		rep.Skipped = append(rep.Skipped, netresult.Skip{Engine: filesrv.IOURing, Reason: r.IOURing.Reason})
		logf("skipping %s: %s", filesrv.IOURing, r.IOURing.Reason)
	}
	rep.Config = netresult.FileServeConfig{FileSizes: sizes, Methods: methods, Rounds: rounds,
		DurationNs: int64(duration), ServerCPUs: srvCPUs, ClientCPUs: cliCPUs}
	total := rounds * len(sizes) * len(methods)
	done := 0
	bc := filesrv.BenchConfig{
		Dir: o.Dir, Sizes: sizes, Methods: methods, Rounds: rounds, Duration: duration,
		Start: FileServerStart(o.Command),
		Progress: func(r netresult.FileServe) {
			done++
			if o.Progress != nil {
				o.Progress(done, total, fmt.Sprintf("%s %s", r.Method, units.FormatSize(r.FileSize)))
			}
		},
	}
	// The client runs in this process: pin it away from the servers'
	// CPU, as the echo bench pins its load generator, and give the
	// process its CPUs back afterwards.
	if cliCPUs != nil {
		if old, err := sys.Affinity(); err == nil && sys.SetProcessAffinity(0, cliCPUs) == nil {
			defer sys.SetProcessAffinity(0, old)
		} else {
			rep.Config.ClientCPUs = nil
		}
	}
	rs, err := filesrv.Bench(ctx, bc)
	rep.Results = netresult.FileServeMedians(rs)
	return rep, err
}

// FileServerStart returns a filesrv.StartFunc that runs each file server
// in a child process of its own (the `net file-server` command of the
// binary command builds), pinned like the echo servers, so that the
// server's process CPU is its own.
func FileServerStart(command func(args ...string) *exec.Cmd) filesrv.StartFunc {
	srvCPUs, _, _ := Pinning()
	return func(ctx context.Context, sc filesrv.ServerConfig) (string, func() error, error) {
		cmd := command("net", "file-server", "--path", sc.Path, "--method", sc.Method,
			"--chunk", strconv.Itoa(sc.Chunk), "--depth", strconv.Itoa(sc.Depth), "--addr", "127.0.0.1:0")
		// Each connection is served on a locked thread in blocking
		// syscalls; one P is enough.
		cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
		s, err := launch(ctx, cmd, "file server ("+sc.Method+")", "file server ("+sc.Method+")", srvCPUs)
		if err != nil {
			return "", nil, err
		}
		return s.addr, func() error {
			s.stop(ctx)
			if s.waitErr != nil {
				return fmt.Errorf("%s: %v: %s", s.engine, s.waitErr, s.stderr.last())
			}
			return nil
		}, nil
	}
}
