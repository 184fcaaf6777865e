package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/iopath/iopath/gen"
	"github.com/iopath/iopath/internal/outfile"
	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/internal/units"
)

// genOptions are the flags of "iopath gen".
type genOptions struct {
	size   genSizeValue
	seed   uint64
	force  bool
	sync   bool
	tree   string
	files  int
	fanOut int
}

// genSizeValue is --size: a byte size for FILE, a size distribution for
// --tree (a plain size is a fixed distribution).
type genSizeValue struct {
	set  bool
	n    int64    // a plain size
	dist gen.Dist // a distribution; for a plain size n > 0, FixedSize(n)
}

func (s *genSizeValue) String() string {
	if !s.set {
		return "" // no default shown: it depends on FILE or --tree
	}
	return s.dist.String()
}

func (s *genSizeValue) Set(str string) error {
	if n, err := units.ParseSize(str); err == nil {
		*s = genSizeValue{set: true, n: n}
		if n > 0 {
			s.dist = gen.FixedSize(n)
		}
		return nil
	}
	d, err := gen.ParseDist(str)
	if err != nil {
		if strings.ContainsAny(str, "-:") {
			return err // it was meant as a distribution: say what is wrong with it
		}
		return fmt.Errorf("%q: want a size like 4KiB or, with --tree, a distribution like 1KiB-64KiB or lognormal:11KiB", str)
	}
	*s = genSizeValue{set: true, n: -1, dist: d}
	return nil
}

func (s *genSizeValue) Type() string { return "size" }

func init() { subcommands = append(subcommands, newGenCmd) }

func newGenCmd(stdout, stderr io.Writer) *cobra.Command {
	o := genOptions{files: 100_000, fanOut: gen.DefaultFanOut}
	cmd := &cobra.Command{
		Use:   "gen {FILE | --tree DIR} [--size SIZE] [--files N] [--seed N] [--force]",
		Short: "Write a file, or a tree of files, of pseudo-random data to measure reads with",
		Long: `gen writes SIZE bytes (default 1GiB) of fast, incompressible pseudo-random
data to FILE. The same seed and size always give the same bytes. An
existing FILE is refused unless --force. The data is written to a
temporary file beside FILE, which takes FILE's name only when complete:
on any error (a full disk, Ctrl-C) it is removed, and an existing FILE is
left as it was. With --force both files exist until then, so the space
check counts the whole new SIZE, not the growth over the old file.

With --tree DIR it writes --files N files instead, 100 to a directory,
nested like a source tree (DIR/03/17/file-31742.dat), with sizes drawn
from the distribution --size (default 4KiB):

  4KiB            every file 4 KiB
  1KiB-64KiB      uniform between 1 KiB and 64 KiB
  lognormal       log-normal around a median of 8 KiB (sigma 1.2, at most 16MiB)
  lognormal:11KiB log-normal with median 11 KiB

The same --files, --size, --seed and --fanout always give the same names,
sizes and bytes. DIR is created if missing; an existing DIR must be empty
or a tree gen made with exactly the same flags (recorded in DIR/.iopath-tree),
which is then rewritten. Nothing else is ever written over. A tree that
would not fit in the free space is refused; on an error or Ctrl-C gen stops,
says how many files it wrote, and leaves no partial file.

A progress bar is drawn on stderr when it is a terminal; a one-line summary
is printed at the end.`,
		Example: `  iopath gen /var/tmp/data --size 8GiB
  iopath gen --tree /var/tmp/small --files 100000 --size 4KiB
  iopath gen --tree /var/tmp/src --files 50000 --size lognormal:11KiB --seed 2
  iopath gen --tree /var/tmp/mixed --files 2000 --size 1KiB-64KiB`,
		Args: argsUsage(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("tree") {
				if len(args) > 0 {
					return usagef("gen: FILE and --tree DIR are mutually exclusive")
				}
				for _, name := range []string{"force", "sync"} {
					if cmd.Flags().Changed(name) {
						return usagef("gen: --%s is for FILE, not --tree", name)
					}
				}
				return runGenTree(cmd.Context(), o, stderr)
			}
			for _, name := range []string{"files", "fanout"} {
				if cmd.Flags().Changed(name) {
					return usagef("gen: --%s needs --tree DIR", name)
				}
			}
			if len(args) == 0 {
				return usagef("gen: want FILE or --tree DIR (see iopath gen --help)")
			}
			return runGen(cmd.Context(), o, args[0], stderr)
		},
	}
	f := cmd.Flags()
	f.Var(&o.size, "size", "bytes to write to FILE (default 1GiB: 4k, 128KiB, 1GiB), or with --tree the size distribution (default 4KiB: 4KiB, 1KiB-64KiB, lognormal, lognormal:11KiB)")
	f.Uint64Var(&o.seed, "seed", 0, "selects the content; the same seed gives the same bytes")
	f.BoolVar(&o.force, "force", false, "overwrite FILE if it exists (never a directory or device)")
	f.BoolVar(&o.sync, "sync", false, "fsync FILE before exiting")
	f.StringVar(&o.tree, "tree", "", "write a tree of files under `DIR` instead of one FILE")
	f.IntVar(&o.files, "files", o.files, fmt.Sprintf("with --tree, the number of files (1 to %d)", gen.MaxTreeFiles))
	f.IntVar(&o.fanOut, "fanout", o.fanOut, "with --tree, the most entries in any directory")
	return cmd
}

func runGen(ctx context.Context, o genOptions, path string, stderr io.Writer) error {
	if path == "" {
		return usagef("gen: empty file name")
	}
	size := int64(1 << 30)
	if o.size.set {
		if o.size.n < 0 {
			return usagef("gen: --size %s is a distribution; FILE takes one size (or use --tree DIR)", o.size.dist)
		}
		size = o.size.n
	}
	prog := newProgress(stderr)
	defer prog.done()
	start := time.Now()
	err := gen.File(ctx, path, size, gen.Options{
		Seed:     o.seed,
		Force:    o.force,
		Sync:     o.sync,
		Progress: prog.bytes("gen " + quotePath(path)),
		Temp:     cleanups.removeOnExit,
	})
	if errors.Is(err, outfile.ErrExists) {
		// The rule for every output file: bad usage, exit status 2.
		return usageError{err}
	}
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	prog.done()
	fmt.Fprintf(stderr, "wrote %s to %s in %s%s\n", units.FormatSize(size), quotePath(path),
		formatElapsed(elapsed), formatRate(size, elapsed))
	return nil
}

func runGenTree(ctx context.Context, o genOptions, stderr io.Writer) error {
	dir := o.tree
	if dir == "" {
		return usagef("gen: empty --tree directory")
	}
	if o.files < 1 || o.files > gen.MaxTreeFiles {
		return usagef("gen: --files %d out of range [1, %d]", o.files, gen.MaxTreeFiles)
	}
	if o.fanOut < 2 {
		return usagef("gen: --fanout %d: must be at least 2", o.fanOut)
	}
	dist := gen.FixedSize(4 << 10)
	if o.size.set {
		if o.size.n == 0 {
			return usagef("gen: --size must be at least 1 byte with --tree")
		}
		dist = o.size.dist
	}
	opts := gen.TreeOptions{Files: o.files, Size: dist, Seed: o.seed, FanOut: o.fanOut}
	plan, err := gen.PlanTree(dir, opts)
	if err != nil {
		return err
	}
	if !plan.Regenerate {
		spaceDir := dir
		if plan.CreateRoot {
			spaceDir = filepath.Dir(dir)
		}
		if _, avail, _, err := sys.Statfs(spaceDir); err == nil && uint64(plan.Disk) > avail {
			return usagef("gen: %d files of sizes %s need about %s, and %s has %s free (lower --files or --size)",
				o.files, dist, units.RoughSize(plan.Disk), quotePath(spaceDir), units.RoughSize(int64(avail)))
		}
	}

	prog := newProgress(stderr)
	defer prog.done()
	if steps := prog.steps(); steps != nil {
		what := "gen " + quotePath(dir)
		opts.Progress = func(done, total int) { steps(done, total, what) }
	}
	start := time.Now()
	st, err := gen.Tree(ctx, dir, opts)
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	prog.done()
	verb := "wrote"
	if st.Regenerated {
		verb = "rewrote"
	}
	fmt.Fprintf(stderr, "%s %d files (%s, sizes %s) in %s in %s\n", verb, st.Files,
		units.RoughSize(st.Bytes), dist, quotePath(dir), formatElapsed(elapsed))
	return nil
}

// formatElapsed formats a short duration for people: 0.8s, 12.3ms, 450µs.
func formatElapsed(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%dµs", d.Microseconds())
}

// formatRate formats " (1.3 GiB/s)", or "" when there is nothing to divide.
func formatRate(n int64, d time.Duration) string {
	if n == 0 || d <= 0 {
		return ""
	}
	r := float64(n) / d.Seconds()
	if r >= 1<<30 {
		return fmt.Sprintf(" (%.1f GiB/s)", r/(1<<30))
	}
	return fmt.Sprintf(" (%.0f MiB/s)", r/(1<<20))
}
