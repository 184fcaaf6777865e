package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/iopath/iopath/batch"
	"github.com/iopath/iopath/bench"
	"github.com/iopath/iopath/gen"
	"github.com/iopath/iopath/internal/units"
	"github.com/iopath/iopath/report"
)

// runBenchTree is `iopath bench --tree [DIR]`.
func runBenchTree(ctx context.Context, o benchOptions, cmd *cobra.Command, args []string, stdout, stderr io.Writer) error {
	flags := cmd.Flags()
	for _, name := range []string{"fio", "bs", "qd", "pattern", "vectors", "sqpoll", "consume", "size"} {
		if flags.Changed(name) {
			return usagef("bench: --%s is for one file; it cannot be used with --tree", name)
		}
	}
	if !slices.Contains(report.Formats(), o.format) {
		return usagef("bench: --format %q: want one of %s", o.format, strings.Join(report.Formats(), ", "))
	}
	if o.html != "" {
		if err := checkOutputFile(o.html, o.force, args...); err != nil {
			return usagef("bench: --html: %v", err)
		}
	}
	if err := checkJSONFile("bench", o.json, o.html, o.force, args...); err != nil {
		return err
	}
	if err := o.observe.checkDirs("bench"); err != nil {
		return err
	}
	o.observe.probePerf(stderr)
	cfg := bench.TreeConfig{
		Engines:     o.engines,
		Runs:        o.runs,
		Workers:     o.workers,
		PoolWorkers: o.pool,
		Depth:       o.depth,
		MinTime:     o.minTime,
		NoLatency:   o.noLatency,
		Command:     commandLine(cmd, args),
		Version:     version,
		Archive:     o.pack,

		ProfileDir:     o.observe.profile,
		PerfDir:        o.observe.perf,
		TraceDir:       o.observe.trace,
		PerfFreq:       o.observe.perfFreq,
		ProfileReplace: o.force,
		TrackTemp:      cleanups.removeOnExit,
		TrackTempDir:   cleanups.removeTreeOnExit,
	}
	if !flags.Changed("engines") {
		cfg.Engines = bench.DefaultTreeEngines()
	}
	for _, c := range o.caches {
		cs, err := bench.ParseCache(c)
		if err != nil {
			return usagef("bench: --cache: %v", err)
		}
		cfg.Caches = append(cfg.Caches, cs)
	}
	if o.pool < 1 || o.depth < 0 {
		return usagef("bench: --pool must be at least 1 and --depth at least 0")
	}
	if err := cfg.Validate(); err != nil {
		return usagef("bench: %v", err)
	}
	if o.files < 1 || o.files > 10_000_000 {
		return usagef("bench: --files %d: want 1 to 10,000,000", o.files)
	}
	dist := o.dist
	prog := newProgress(stderr)

	if len(args) == 1 {
		if flags.Changed("files") || flags.Changed("dist") {
			return usagef("bench: --files and --dist make the temporary tree; they cannot be used with DIR")
		}
		cfg.Dir = args[0]
		if err := bench.CheckTreeDir(cfg.Dir); err != nil {
			return err
		}
	} else {
		d, err := gen.ParseDist(dist)
		if err != nil {
			return usagef("bench: --dist: %v", err)
		}
		base := o.dir
		if base == "" {
			base = defaultTempDir()
		}
		tmp, err := os.MkdirTemp(base, "iopath-tree-*")
		if err != nil {
			return err
		}
		forget := cleanups.removeTreeOnExit(tmp)
		defer func() {
			os.RemoveAll(tmp)
			forget()
		}()
		dir := filepath.Join(tmp, "tree")
		fmt.Fprintf(stderr, "iopath: making a temporary tree of %d files (%s) in %s (give a DIR to measure your own)\n", o.files, dist, quotePath(tmp))
		t0 := time.Now()
		opts := gen.TreeOptions{Files: o.files, Size: d}
		if step := prog.steps(); step != nil {
			opts.Progress = func(done, total int) { step(done, total, "writing files") }
		}
		_, err = gen.Tree(ctx, dir, opts)
		prog.done()
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "iopath: wrote the tree in %.1fs\n", time.Since(t0).Seconds())
		cfg.Dir, cfg.TempDir = dir, true
	}
	if cfg.Archive == "" && slices.Contains(cfg.Engines, "archive") {
		path, forget, err := packTemp(ctx, cfg.Dir, o.dir, stderr)
		if err != nil {
			return err
		}
		defer func() {
			os.Remove(path)
			forget()
		}()
		cfg.Archive = path
	}
	cfg.Progress = prog.steps()
	rep, err := bench.MeasureTree(ctx, cfg)
	prog.done()
	if rep == nil {
		return err
	}
	if n := o.observe.perfNote(); n != "" {
		rep.Notes = append(rep.Notes, n)
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

// packTemp packs dir into a temporary tar.zst for the archive engine. The
// archive is in the cleanup set until the caller calls forget (having
// removed it).
func packTemp(ctx context.Context, dir, base string, stderr io.Writer) (path string, forget func(), err error) {
	if base == "" {
		base = defaultTempDir()
	}
	f, err := os.CreateTemp(base, "iopath-pack-*.tar.zst")
	if err != nil {
		return "", nil, err
	}
	forget = cleanups.removeOnExit(f.Name())
	t0 := time.Now()
	st, err := batch.Pack(ctx, dir, f, batch.PackOptions{Zstd: true})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		forget()
		return "", nil, err
	}
	fmt.Fprintf(stderr, "iopath: packed the tree for the archive engine into %s (%s) in %.1fs\n", quotePath(f.Name()), units.RoughSize(st.Written), time.Since(t0).Seconds())
	return f.Name(), forget, nil
}
