package main

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/iopath/iopath/perf"
)

// observeOptions are the per-run outputs a measuring command can write:
// pprof CPU profiles (--profile), perf recordings with kernel frames
// (--perf) and execution traces (--trace), each into a directory.
type observeOptions struct {
	profile, perf, trace string
	perfFreq             int // --perf-freq
	// perfErr says why --perf was dropped: perf is missing or forbidden.
	perfErr error
}

// addPerfFlag adds --perf and --perf-freq to a command's flags.
func (o *observeOptions) addPerfFlag(f *pflag.FlagSet, what string) {
	f.StringVar(&o.perf, "perf", "", "record "+what+" with perf (kernel and Go frames, cpu-clock) into this directory, made if missing: a pprof profile per run (go tool pprof -http :8080 FILE) and a CPU breakdown in the report")
	f.IntVar(&o.perfFreq, "perf-freq", perf.DefaultFreq, "--perf: samples per second per CPU (perf's own default, 4000, costs the program more: docs/perf.md)")
}

// addFlags adds --profile, --perf and --trace.
func (o *observeOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.profile, "profile", "", "write a pprof CPU profile of each run into this directory, made if missing (open with go tool pprof -http)")
	o.addPerfFlag(f, "each run")
	f.StringVar(&o.trace, "trace", "", "write an execution trace of each run into this directory, made if missing (open with go tool trace)")
}

// checkDirs checks each directory given, naming its flag, and
// --perf-freq.
func (o *observeOptions) checkDirs(cmd string) error {
	if max := perf.MaxFreq(); o.perfFreq < 1 || o.perfFreq > max {
		return usagef("%s: --perf-freq %d: want 1 to %d Hz (kernel.perf_event_max_sample_rate)", cmd, o.perfFreq, max)
	}
	for _, d := range []struct{ flag, dir string }{{"--profile", o.profile}, {"--perf", o.perf}, {"--trace", o.trace}} {
		if d.dir == "" {
			continue
		}
		if err := checkOutputDir(d.dir); err != nil {
			return usagef("%s: %s: %v", cmd, d.flag, err)
		}
	}
	return nil
}

// probePerf drops --perf when perf cannot record here, saying exactly why
// and how to allow it on stderr, and keeps the reason for the report's
// notes: the benchmark goes on without it.
func (o *observeOptions) probePerf(stderr io.Writer) {
	if o.perf == "" {
		return
	}
	if _, err := perf.Probe(); err != nil {
		o.perfErr = err
		o.perf = ""
		fmt.Fprintf(stderr, "iopath: --perf: %v; going on without it\n", err)
	}
}

// perfNote is the report's note when --perf was dropped, or "".
func (o *observeOptions) perfNote() string {
	if o.perfErr == nil {
		return ""
	}
	return fmt.Sprintf("--perf: no recordings: %v", o.perfErr)
}
