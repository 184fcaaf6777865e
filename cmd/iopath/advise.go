package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/iopath/iopath/advise"
	"github.com/iopath/iopath/report"
)

// adviseOptions are the flags of "iopath advise".
type adviseOptions struct {
	budget  time.Duration
	format  string
	wide    bool
	observe observeOptions // --perf
}

// Bounds of --budget: below a second the trial has no time to repeat
// anything; above an hour it is not a "short trial" any more.
const (
	adviseMinBudget = time.Second
	adviseMaxBudget = time.Hour
)

func init() { subcommands = append(subcommands, newAdviseCmd) }

func newAdviseCmd(stdout, stderr io.Writer) *cobra.Command {
	o := adviseOptions{budget: advise.DefaultBudget, format: "table"}
	cmd := &cobra.Command{
		Use:   "advise [flags] PATH...",
		Short: "Measure a short trial on your own files and recommend an I/O path, with the Go code",
		Long: `advise looks at your files — one big file, or a tree or list of many — runs
a short trial of the candidate I/O paths on a sample of them within a time
budget, and recommends the fastest for the state your data is in now
(cached or not), with the figures behind it, what iopath's Auto would
pick, and the Go code that uses the path through package iopath.

Many files (a directory, or several files) are read whole through each
batch engine: readfile (os.ReadFile, the baseline), pool, raw and io_uring,
from a sample of up to 20,000 files. One file is read through read (the
baseline), pread, mmap and io_uring, at most 1 GiB of it. Each path is
measured warm (the data read once first) and, when the budget allows,
cold (the data dropped from the page cache before every pass), in
interleaved rounds; the medians are shown.

advise never writes to, renames, truncates or changes the mode of your
files: it only lists, stats, reads them, and asks the kernel to drop them
from the page cache for the cold trial (which it cannot do for pages not
yet written back: it then says so). Dropping the cache makes your next
reads of these files slower once; advise leaves cached data cached.

A progress bar is drawn on stderr when it is a terminal. --format json
prints the whole result for programs (fields in docs/advise.md); csv and
markdown print the table of figures, with the recommendation after it.

--perf DIR records the trial with perf (kernel and Go frames), switched
on only while a candidate reads (not while the data is warmed, dropped
or checked): a second table shows where each candidate's CPU went (user
code, Go runtime, syscalls, kernel copies, page faults, io_uring, the
rest of the kernel), and DIR gets a pprof profile per candidate and
cache state, CANDIDATE-CACHE.pb.gz (raw-x2-warm.pb.gz; go tool pprof
-http :8080 FILE). DIR is made if missing; a profile never replaces a
file: advise refuses to start when one of the names exists. Reading the
recording takes a second or more after the budget. When perf cannot
record here, advise says why and goes on without it.`,
		Example: `  iopath advise ./testdata
  iopath advise /var/lib/app/index.bin
  iopath advise --budget 5s src/ assets/
  iopath advise --perf /tmp/prof /var/lib/app/index.bin
  iopath advise --format json $(go env GOROOT)/src | jq .recommendation`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAdvise(cmd.Context(), o, args, stdout, stderr)
		},
	}
	f := cmd.Flags()
	f.DurationVar(&o.budget, "budget", o.budget, fmt.Sprintf("time the whole trial may take, listing included (%v to %v)", adviseMinBudget, adviseMaxBudget))
	f.StringVar(&o.format, "format", o.format, "output: "+strings.Join(report.KindFormats, ", "))
	f.BoolVar(&o.wide, "wide", false, "show the less-used columns too")
	o.observe.addPerfFlag(f, "the trial")
	f.Lookup("perf").Usage = "record the trial with perf (kernel and Go frames, cpu-clock; only while the candidates read) into `DIR`, made if missing: a pprof profile per candidate and cache state (go tool pprof -http :8080 FILE) and where their CPU went in the report"
	return cmd
}

func runAdvise(ctx context.Context, o adviseOptions, paths []string, stdout, stderr io.Writer) error {
	if len(paths) == 0 {
		return usagef("advise: no PATH given (a file, a directory, or several; see iopath advise --help)")
	}
	if o.budget < adviseMinBudget || o.budget > adviseMaxBudget {
		return usagef("advise: --budget %v out of range [%v, %v]", o.budget, adviseMinBudget, adviseMaxBudget)
	}
	if o.format == "text" {
		o.format = "table" // its old name, still taken
	}
	if !slices.Contains(report.KindFormats, o.format) {
		return usagef("advise: --format %q: want one of %s", o.format, strings.Join(report.KindFormats, ", "))
	}
	for _, p := range paths {
		if p == "-" {
			return usagef("advise: reading a list of paths from stdin (-) is not supported; name the files or directories")
		}
	}
	if err := o.observe.checkDirs("advise"); err != nil {
		return err
	}
	o.observe.probePerf(stderr)
	prog := newProgress(stderr)
	defer prog.done()
	res, err := advise.Run(ctx, paths, advise.Options{Budget: o.budget, Progress: adviseProgress(prog),
		PerfDir: o.observe.perf, PerfFreq: o.observe.perfFreq, TrackTemp: cleanups.removeOnExit, TrackTempDir: cleanups.removeTreeOnExit})
	prog.done()
	if errors.Is(err, context.Canceled) {
		return errors.New("advise: interrupted; nothing to recommend")
	}
	var exists *advise.ProfileExistsError
	if errors.As(err, &exists) {
		// advise has no --force: a profile never replaces a file.
		return usagef("advise: --perf: %s: exists; remove it or give --perf another directory", quotePath(exists.Path))
	}
	if err != nil {
		return fmt.Errorf("advise: %w", err)
	}
	if n := o.observe.perfNote(); n != "" {
		res.Notes = append(res.Notes, n)
	}
	return report.WriteAdvise(stdout, o.format, res, report.DocOptions{Wide: o.wide})
}

// adviseProgress returns advise's progress callback for p, or nil without
// a terminal: a bar of the time spent against the budget (the callback
// counts tenths of a second), described by what is being measured.
func adviseProgress(p *progress) func(done, total int, what string) {
	if !p.tty {
		return nil
	}
	return func(done, total int, what string) {
		if p.bar == nil {
			p.bar = progressbar.NewOptions(total,
				progressbar.OptionSetWriter(p.w),
				progressbar.OptionSetWidth(30),
				progressbar.OptionSetPredictTime(false),
				progressbar.OptionClearOnFinish(),
			)
		}
		p.bar.Describe(fmt.Sprintf("advise: %-36s", what))
		p.bar.Set(min(done, total))
	}
}
