package filesrv_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/iopath/iopath/netio/filesrv"
	"github.com/iopath/iopath/netio/netresult"
)

// A child process's main: serve a file on the listener inherited as fd 3
// until SIGTERM. `iopath net bench --serve-file` runs one per run, so that
// the server's CPU is its process's alone.
func ExampleServe() {
	ln, err := net.FileListener(os.NewFile(3, "listener"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	err = filesrv.Serve(ctx, ln, filesrv.ServerConfig{Path: "/srv/file", Method: filesrv.Sendfile})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// Measure sendfile on a file with a server in this process, for one
// second, and print the headline figures.
func ExampleRun() {
	r, err := filesrv.Run(context.Background(), filesrv.Config{
		Path: "/srv/file", Method: filesrv.Sendfile, Duration: time.Second,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%.2f GB/s, %.3f server CPU-s/GB, %.1f syscalls/MB, verified %v\n",
		r.GBps, r.CPUSecPerGB, r.SyscallsPerMB, r.Verified)
}

// Every method on the default sizes, three interleaved rounds, reduced to
// medians.
func ExampleBench() {
	rs, err := filesrv.Bench(context.Background(), filesrv.BenchConfig{Rounds: 3})
	if err != nil {
		fmt.Println(err)
	}
	for _, r := range netresult.FileServeMedians(rs) {
		fmt.Printf("%-9s %9d B: %.3f CPU-s/GB\n", r.Method, r.FileSize, r.CPUSecPerGB)
	}
}
