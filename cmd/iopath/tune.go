package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/iopath/iopath/internal/profile"
	"github.com/iopath/iopath/internal/units"
	"github.com/iopath/iopath/tune"
)

type tuneOptions struct {
	budget  time.Duration
	maxSize int64
	force   bool
	show    bool
	format  string
}

func init() { subcommands = append(subcommands, newTuneCmd) }

func newTuneCmd(stdout, stderr io.Writer) *cobra.Command {
	o := tuneOptions{budget: tune.DefaultBudget, maxSize: tune.DefaultMaxSize, format: "table"}
	cmd := &cobra.Command{
		Use:   "tune [flags] [DIR]",
		Short: "Measure how this machine reads cached files fastest, and save it as the profile Auto uses",
		Long: `tune measures, on this machine, how iopath.ReadFile and iopath.Scan read
cached files of 64 KiB to 64 MiB (to 256 MiB with --max-size 256MiB)
fastest, and saves what it found as the machine profile, which Auto then
reads in every process on this machine (its Reason says "machine
profile ..."). Without a profile Auto uses
defaults measured on two CPUs (docs/auto.md); a profile replaces them
where this machine differs.

The trial files are written into DIR (the current directory by default),
whose filesystem is the one tuned, and removed when tune ends. At each
size Auto's default is measured against each path it could take instead
(read, pread and mmap with one worker, pread and mmap with one worker per
core) and against itself (the "again" column: the noise), call by call
in a shuffled order, in 5 rounds. A path replaces the default only when
the median of its per-call ratios to the default beats the noise by more
than 5% and it is faster in 4 rounds of 5 at least; each measured size
covers the sizes up to halfway, on a log scale, to its neighbours.

The profile is a JSON file in the user's cache directory
($XDG_CACHE_HOME/iopath or ~/.cache/iopath), named for this machine (CPU
model, CPU count, kernel release), with a section per filesystem tuned:
a profile made on another machine, or before a kernel upgrade, is
ignored. IOPATH_PROFILE=off makes every process ignore it, and
IOPATH_PROFILE=FILE makes them (and tune) use FILE instead. tune adds the
section of a filesystem to the profile; replacing one already there
needs --force.

The rules cover cached files only (and files under 8 MiB, whatever their
state): uncached reads are the device's, and Auto's defaults hold there.`,
		Example: `  iopath tune
  iopath tune /var/lib/app        # tune the filesystem your data is on
  iopath tune --show              # the profile in use, and its rules
  IOPATH_PROFILE=off go test -bench .   # measure without it`,
		Args: argsUsage(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runTune(cmd.Context(), o, args, stdout, stderr)
		},
	}
	f := cmd.Flags()
	f.DurationVar(&o.budget, "time", o.budget, fmt.Sprintf("about how long the measuring takes (%v to %v); writing the trial files comes on top", tune.MinBudget, tune.MaxBudget))
	f.Var(sizeValue{&o.maxSize}, "max-size", "largest trial file (64KiB to 256MiB; lowered to fit free space and memory)")
	f.BoolVar(&o.force, "force", false, "replace the profile's section for this filesystem, or a profile that is not valid here")
	f.BoolVar(&o.show, "show", false, "print the profile in use and its rules, and measure nothing")
	f.StringVar(&o.format, "format", o.format, "output: table or json")
	return cmd
}

func runTune(ctx context.Context, o tuneOptions, args []string, stdout, stderr io.Writer) error {
	if o.format != "table" && o.format != "json" {
		return usagef("tune: --format %q: want table or json", o.format)
	}
	if o.show {
		if len(args) > 0 {
			return usagef("tune: --show takes no DIR")
		}
		return showProfile(stdout, o.format)
	}
	if o.budget < tune.MinBudget || o.budget > tune.MaxBudget {
		return usagef("tune: --time %v out of range [%v, %v]", o.budget, tune.MinBudget, tune.MaxBudget)
	}
	if o.maxSize < tune.Sizes[0] || o.maxSize > tune.MaxSize {
		return usagef("tune: --max-size %s out of range [64KiB, 256MiB]", units.FormatSize(o.maxSize))
	}
	dir := "."
	if len(args) == 1 {
		dir = args[0]
	}
	path, err := tune.ProfilePath()
	if err != nil {
		return fmt.Errorf("tune: %w", err)
	}
	if err := tune.CheckSave(path, dir, o.force); err != nil {
		return fmt.Errorf("tune: %w", err)
	}
	prog := newProgress(stderr)
	defer prog.done()
	res, err := tune.Run(ctx, dir, tune.Options{Budget: o.budget, MaxSize: o.maxSize, Progress: prog.steps(), Temp: cleanups.removeOnExit})
	prog.done()
	if errors.Is(err, context.Canceled) {
		return errors.New("tune: interrupted; the profile is unchanged")
	}
	if err != nil {
		return fmt.Errorf("tune: %w", err)
	}
	p, err := tune.Save(res, path, version, o.force, cleanups.removeOnExit)
	if err != nil {
		return fmt.Errorf("tune: measured, but not saved: %w", err)
	}
	if o.format == "json" {
		e := json.NewEncoder(stdout)
		e.SetIndent("", "  ")
		return e.Encode(p)
	}
	writeTuneResult(stdout, res, p.Path())
	return nil
}

// writeTuneResult prints what was measured and the rules saved.
func writeTuneResult(w io.Writer, r *tune.Result, path string) {
	fmt.Fprintf(w, "%s in %s, %s, GOMAXPROCS %d: %d rounds, %.1f s\n",
		r.Filesystem, quotePath(r.Dir), r.Key, r.GOMAXPROCS, tune.Rounds, r.Took.Seconds())
	for _, n := range r.Notes {
		fmt.Fprintf(w, "left out: %s\n", n)
	}
	writeTrials(w, r.Trials)
	fmt.Fprintf(w, "\nsaved to %s (%s)\n", quotePath(path), r.Filesystem)
	writeRules(w, r.Rules)
}

// writeTrials prints each kind's trials as a table: the default's rate,
// each other way's ratio to it, and the way chosen.
func writeTrials(w io.Writer, trials []tune.Trial) {
	for _, kind := range []string{tune.WholeFile, tune.Blocks} {
		var names []string
		for _, t := range trials {
			for _, wy := range t.Ways[1:] {
				if !slices.Contains(names, wy.Name) {
					names = append(names, wy.Name)
				}
			}
		}
		sort.Strings(names)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "\n%s, cached\tdefault\tGiB/s\t%s\tchosen\t\n", kindName(kind), strings.Join(names, "\t"))
		for _, t := range trials {
			if t.Kind != kind {
				continue
			}
			d := t.Ways[0]
			row := []string{units.FormatSize(t.Size), tune.DefaultLabel(d), fmt.Sprintf("%.2f", d.Rate/(1<<30))}
			for _, n := range names {
				cell := "-"
				for _, wy := range t.Ways[1:] {
					if wy.Name == n {
						cell = fmt.Sprintf("%.2f×", wy.Ratio)
					}
				}
				row = append(row, cell)
			}
			chosen := "default"
			if t.Winner != "" {
				chosen = t.Winner
			}
			fmt.Fprintf(tw, "%s\t%s\t\n", strings.Join(row, "\t"), chosen)
		}
		tw.Flush()
	}
}

func kindName(kind string) string {
	if kind == tune.WholeFile {
		return "ReadFile"
	}
	return "Scan"
}

// writeRules prints a section's rules, one a line.
func writeRules(w io.Writer, rules []tune.Rule) {
	if len(rules) == 0 {
		fmt.Fprintln(w, "no rule: Auto's defaults were the fastest (or within 5%) at every size measured")
		return
	}
	for _, r := range rules {
		hi := "up"
		if r.MaxSize > 0 {
			hi = "to " + units.FormatSize(r.MaxSize)
		}
		workers := fmt.Sprintf("%d worker", r.Workers)
		switch {
		case r.Workers == profile.PerCore:
			workers = "one worker per core"
		case r.Workers > 1:
			workers += "s"
		}
		fmt.Fprintf(w, "  %s of %s %s: %s, %s (%s)\n", kindName(r.Kind), units.FormatSize(r.MinSize), hi, r.Engine, workers, r.Why)
	}
}

// showProfile prints the state of the profile a new process would read
// and, when one would be used, its sections.
func showProfile(w io.Writer, format string) error {
	st := profile.Look()
	if format == "json" {
		e := json.NewEncoder(w)
		e.SetIndent("", "  ")
		return e.Encode(struct {
			Status  string           `json:"status"`
			Path    string           `json:"path,omitempty"`
			Profile *profile.Profile `json:"profile,omitempty"`
		}{st.Status, st.Path, st.Profile})
	}
	fmt.Fprintf(w, "machine profile: %s\n", st.Status)
	p := st.Profile
	if p == nil {
		return nil
	}
	fmt.Fprintf(w, "machine: %s\n", p.Key)
	var fss []string
	for fs := range p.Filesystems {
		fss = append(fss, fs)
	}
	sort.Strings(fss)
	for _, fs := range fss {
		s := p.Filesystems[fs]
		fmt.Fprintf(w, "\n%s: tuned %s in %s (iopath %s, GOMAXPROCS %d)\n", fs, s.Tuned.Format("2006-01-02 15:04"), quotePath(s.Dir), s.IopathVersion, s.GOMAXPROCS)
		writeRules(w, s.Rules)
	}
	return nil
}
