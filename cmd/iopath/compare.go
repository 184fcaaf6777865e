package main

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/spf13/cobra"

	"github.com/iopath/iopath/report"
)

func init() { subcommands = append(subcommands, newCompareCmd) }

type compareOptions struct {
	format  string
	html    string
	force   bool
	failOn  float64 // --fail-on-regression, in percent
	failSet bool    // whether --fail-on-regression was given
}

func newCompareCmd(stdout, stderr io.Writer) *cobra.Command {
	o := compareOptions{format: "table"}
	cmd := &cobra.Command{
		Use:   "compare OLD.json NEW.json",
		Short: "Compare two bench reports: what got faster or slower beyond the noise",
		Long: `compare reads two reports written by "iopath bench --format json" and matches
their rows by tool, engine, cache state, pattern, block size, workers, queue
depth and consume mode. For each pair it prints the old and new median GiB/s,
and the change (Δ%) in GiB/s, CPU-s/GiB and P99 latency, each with a verdict:
faster or slower (better or worse for CPU and latency, where lower is better),
or noise.

A change is noise when it is smaller than the runs' own spread:
|new − old| < max(old max − old min, new max − new min), the min–max over
each side's successful runs. With a single run on a side the spread is
unknown and the verdict is "?" (1 run: spread unknown): run bench with
--runs 3 or more to get verdicts. Rows in only one report are listed as added
or removed, rows that failed on a side show the error, noisy runs are noted,
and a header lists what differs between the reports' machines (kernel, CPU,
cores, ...), files and iopath versions: figures from different machines are
not comparable.

compare is a report: it exits 0 even when rows got slower. With
--fail-on-regression PCT it exits 1 when a row's GiB/s dropped by more than
PCT percent beyond the noise (noise and "?" rows never fail), or a row that
worked in OLD fails or is missing in NEW, for CI.
It exits 2 on bad usage and 1 when a report cannot be read.`,
		Example: `  iopath bench --format json > old.json
  # ... change the kernel, the settings or iopath itself ...
  iopath bench --format json > new.json
  iopath compare old.json new.json
  iopath compare old.json new.json --html compare.html
  iopath compare old.json new.json --format json
  iopath compare old.json new.json --fail-on-regression 5`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usagef("compare: want two reports, OLD.json and NEW.json, got %d argument%s (see iopath compare --help)",
					len(args), map[bool]string{true: "", false: "s"}[len(args) == 1])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.failSet = cmd.Flags().Changed("fail-on-regression")
			return runCompare(o, args[0], args[1], stdout)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.format, "format", o.format, "output: table or json")
	f.StringVar(&o.html, "html", "", "also write the comparison as a self-contained HTML page (table and chart) to this file")
	f.BoolVar(&o.force, "force", false, "overwrite the --html file if it exists")
	f.Float64Var(&o.failOn, "fail-on-regression", 0, "exit 1 when a row's GiB/s dropped by more than `PCT` percent beyond the noise (default: never fail)")
	return cmd
}

func runCompare(o compareOptions, oldPath, newPath string, stdout io.Writer) error {
	switch o.format {
	case "table", "json":
	default:
		return usagef("compare: --format %q: want table or json", o.format)
	}
	if o.failSet && (o.failOn < 0 || math.IsNaN(o.failOn) || math.IsInf(o.failOn, 0)) {
		return usagef("compare: --fail-on-regression %v: want a percentage, 0 or more", o.failOn)
	}
	if o.html != "" {
		if err := checkOutputFile(o.html, o.force, oldPath, newPath); err != nil {
			return usagef("compare: --html: %v", err)
		}
	}
	oldRep, err := report.LoadJSON(oldPath)
	if err != nil {
		return fmt.Errorf("compare: %w", err)
	}
	newRep, err := report.LoadJSON(newPath)
	if err != nil {
		return fmt.Errorf("compare: %w", err)
	}
	c := report.Compare(oldRep, newRep)
	c.Old.Path, c.New.Path = oldPath, newPath

	if o.html != "" {
		if err := writeFileAtomic(o.html, o.force, func(w io.Writer) error { return report.CompareHTML(w, c) }); err != nil {
			return fmt.Errorf("compare: --html: %w", err)
		}
	}
	if o.format == "json" {
		err = report.CompareJSON(stdout, c)
	} else {
		err = report.CompareTable(stdout, c)
	}
	if err != nil {
		return fmt.Errorf("compare: write output: %w", err)
	}

	if o.failSet {
		if rs := c.Regressions(o.failOn); len(rs) > 0 {
			var names []string
			for _, r := range rs {
				what := "missing in new"
				switch {
				case r.Throughput != nil:
					what = fmt.Sprintf("%+.1f%%", r.Throughput.Pct)
				case r.Status == report.StatusError:
					what = "now fails"
				}
				names = append(names, fmt.Sprintf("%s %s (%s) %s", r.Name(), r.Cache, r.Workload(), what))
			}
			return fmt.Errorf("compare: %d row%s regressed (slower by more than %g%% beyond the noise, failing or missing): %s",
				len(rs), map[bool]string{true: "", false: "s"}[len(rs) == 1], o.failOn, strings.Join(names, "; "))
		}
	}
	return nil
}
