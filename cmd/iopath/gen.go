package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/iopath/iopath/gen"
	"github.com/iopath/iopath/internal/units"
)

// genOptions are the flags of "iopath gen".
type genOptions struct {
	size  int64
	seed  uint64
	force bool
	sync  bool
}

func init() { subcommands = append(subcommands, newGenCmd) }

func newGenCmd(stdout, stderr io.Writer) *cobra.Command {
	o := genOptions{size: 1 << 30}
	cmd := &cobra.Command{
		Use:   "gen FILE [--size SIZE] [--seed N] [--force]",
		Short: "Write a file of pseudo-random data to measure reads with",
		Long: `gen writes SIZE bytes of fast, incompressible pseudo-random data to FILE.
The same seed and size always give the same bytes. An existing FILE is
refused unless --force; on any error (a full disk, Ctrl-C) the partial
file is removed. A progress bar is drawn on stderr when it is a terminal;
a one-line summary is printed at the end.`,
		Example: "  iopath gen /var/tmp/data --size 8GiB",
		Args:    argsUsage(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runGen(cmd.Context(), o, args[0], stderr)
		},
	}
	f := cmd.Flags()
	f.Var(sizeValue{&o.size}, "size", "bytes to write (e.g. 4k, 128KiB, 1GiB)")
	f.Uint64Var(&o.seed, "seed", 0, "selects the content; the same seed gives the same bytes")
	f.BoolVar(&o.force, "force", false, "overwrite FILE if it exists (never a directory or device)")
	f.BoolVar(&o.sync, "sync", false, "fsync FILE before exiting")
	return cmd
}

func runGen(ctx context.Context, o genOptions, path string, stderr io.Writer) error {
	if path == "" {
		return usagef("gen: empty file name")
	}
	if o.size < 0 {
		return usagef("gen: --size must not be negative")
	}
	prog := newProgress(stderr)
	defer prog.done()
	start := time.Now()
	err := gen.File(ctx, path, o.size, gen.Options{
		Seed:     o.seed,
		Force:    o.force,
		Sync:     o.sync,
		Progress: prog.bytes("gen " + path),
	})
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	prog.done()
	fmt.Fprintf(stderr, "wrote %s to %s in %s%s\n", units.FormatSize(o.size), path,
		formatElapsed(elapsed), formatRate(o.size, elapsed))
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
