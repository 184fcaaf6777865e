package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/iopath/iopath/bench"
	"github.com/iopath/iopath/internal/units"
	"github.com/iopath/iopath/report"
)

// appendOnlyFlags are the flags of reads, writes (--rw) and trees, which
// --append does not take.
var appendOnlyFlags = []string{"rw", "tree", "fio", "profile", "perf", "perf-freq", "trace", "bs", "qd", "pattern", "vectors", "sqpoll", "consume",
	"cache", "sync", "write-file", "min-time", "no-latency", "workers", "files", "dist", "pool", "depth", "pack"}

// runBenchAppend is `iopath bench --append`.
func runBenchAppend(ctx context.Context, o benchOptions, cmd *cobra.Command, args []string, stdout, stderr io.Writer) error {
	flags := cmd.Flags()
	if len(args) > 0 {
		return usagef("bench: --append appends to temporary files of its own in --dir; it takes no FILE (%s)", quotePath(args[0]))
	}
	for _, name := range appendOnlyFlags {
		if flags.Changed(name) {
			switch name {
			case "workers":
				return usagef("bench: --append takes --writers, not --workers")
			case "min-time":
				return usagef("bench: --append takes --duration, not --min-time")
			}
			return usagef("bench: --%s cannot be used with --append", name)
		}
	}
	if !slices.Contains(report.Formats(), o.format) {
		return usagef("bench: --format %q: want one of %s", o.format, strings.Join(report.Formats(), ", "))
	}
	for _, w := range o.writers {
		if w < 1 || w > bench.MaxAppendWriters {
			return usagef("bench: --writers %d: want 1 to %d", w, bench.MaxAppendWriters)
		}
	}
	if o.duration <= 0 {
		return usagef("bench: --duration %v: must be positive", o.duration)
	}
	size := int64(bench.DefaultAppendRecord)
	if flags.Changed("size") {
		size = o.size
		if size < bench.MinAppendRecord || size > bench.MaxAppendRecord {
			return usagef("bench: --size %s: an --append record is %d B to %s", units.FormatSize(size), bench.MinAppendRecord, units.FormatSize(bench.MaxAppendRecord))
		}
	}
	if o.runs < 1 {
		return usagef("bench: --runs %d: must be at least 1", o.runs)
	}
	if o.html != "" {
		if err := checkOutputFile(o.html, o.force); err != nil {
			return usagef("bench: --html: %v", err)
		}
	}
	if err := checkJSONFile("bench", o.json, o.html, o.force); err != nil {
		return err
	}
	// Each writer holds a record, and a Log copies it into its batch.
	if err := checkBufferMemory("bench", slices.Max(o.writers), 2, 1, size); err != nil {
		return err
	}
	cfg := bench.AppendConfig{
		Dir:        o.dir,
		Writers:    o.writers,
		RecordSize: int(size),
		Duration:   o.duration,
		Runs:       o.runs,
		Command:    commandLine(cmd, args),
		Version:    version,
		TrackTemp:  cleanups.removeOnExit,
	}
	if flags.Changed("engines") {
		cfg.Methods = o.engines
	}
	if err := cfg.Validate(); err != nil {
		return usagef("bench: --append: %v", err)
	}
	if cfg.Dir == "" {
		cfg.Dir = defaultTempDir()
	}
	if err := bench.CheckAppendDir(cfg.Dir); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "iopath: appending %s records for %v a run to temporary files in %s (--dir to choose), removed after each run\n",
		units.FormatSize(size), cfg.Duration, quotePath(cfg.Dir))
	prog := newProgress(stderr)
	cfg.Progress = prog.steps()
	rep, err := bench.MeasureAppend(ctx, cfg)
	prog.done()
	if rep == nil {
		return err
	}
	rerr := report.Write(stdout, o.format, rep, report.DocOptions{Wide: o.wide})
	if herr := writeOutput(stderr, o.html, o.force, func(w io.Writer) error { return report.HTML(w, rep) }); herr != nil {
		rerr = errors.Join(rerr, herr)
	}
	if jerr := writeOutput(stderr, o.json, o.force, func(w io.Writer) error { return report.JSON(w, rep) }); jerr != nil {
		rerr = errors.Join(rerr, jerr)
	}
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return errors.New("bench: interrupted; the results above are incomplete")
		}
		return fmt.Errorf("bench: %w", err)
	}
	return rerr
}
