package main

import (
	"fmt"
	"io"
	"math"
	"slices"
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
		Short: "Compare two reports of one kind: what got faster or slower beyond the noise",
		Long: `compare reads two JSON reports of one kind — iopath bench (one file),
bench --tree, bench --append, net bench (echo), net bench --serve-file or net
bench --writev — and matches their rows by workload and by the row's name
(engine and cache state for files and trees, method and writers for appends,
engine for echo, method for file serving, way for writev). For each pair it prints the old and new median of the kind's first
headline figure and the change (Δ%) of every headline figure, each with a
verdict:

  file        GiB/s, CPU-s per GiB
  tree        files/s, CPU-s per 1k files
  append      durable records/s, P99 per append, CPU-µs per record
  net-echo    QPS, P99 latency, server CPU-µs per request
  file-serve  GB/s, server CPU-s per GB (per file size)
  writev      sending thread's CPU-ns per response (per part count k)

faster or slower (better or worse where lower is better), or noise. With at
least 5 runs on each side the verdict comes from a Mann–Whitney U test of the
two sides' per-run figures (significant when p < 0.05). With 2 to 4 runs, a
change is noise when it is smaller than the larger of the two sides' min–max
spreads. With a single run on a side there is nothing to judge by and the
verdict is "?": run with --runs 5 to get tested verdicts. Rows in only one
report are listed as added or removed, rows that failed on a side show the
error, and a header lists what differs between the reports' machines
(kernel, CPU, cores, ...) and settings: figures from different machines are
not comparable.

compare is a report: it exits 0 even when rows got slower. With
--fail-on-regression PCT it exits 1 when a row's first headline figure got
worse by more than PCT percent beyond the noise (noise and "?" rows never
fail), or a row that worked in OLD fails or is missing in NEW, for CI.
It exits 2 on bad usage and 1 when a report cannot be read.`,
		Example: `  iopath bench --runs 5 --json old.json
  # ... change the kernel, the settings or iopath itself ...
  iopath bench --runs 5 --json new.json
  iopath compare old.json new.json
  iopath compare old.json new.json --format markdown   # for a pull request
  iopath compare old.json new.json --html compare.html
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
	f.StringVar(&o.format, "format", o.format, "output: "+strings.Join(report.KindFormats, ", "))
	f.StringVar(&o.html, "html", "", "also write the comparison as a self-contained HTML page (table and chart) to this file")
	f.BoolVar(&o.force, "force", false, "overwrite the --html file if it exists")
	f.Float64Var(&o.failOn, "fail-on-regression", 0, "exit 1 when a row's headline figure got worse by more than `PCT` percent beyond the noise (default: never fail)")
	return cmd
}

func runCompare(o compareOptions, oldPath, newPath string, stdout io.Writer) error {
	if !slices.Contains(report.KindFormats, o.format) {
		return usagef("compare: --format %q: want one of %s", o.format, strings.Join(report.KindFormats, ", "))
	}
	if o.failSet && (o.failOn < 0 || math.IsNaN(o.failOn) || math.IsInf(o.failOn, 0)) {
		return usagef("compare: --fail-on-regression %v: want a percentage, 0 or more", o.failOn)
	}
	if o.html != "" {
		if err := checkOutputFile(o.html, o.force, oldPath, newPath); err != nil {
			return usagef("compare: --html: %v", err)
		}
	}
	c, err := report.CompareFiles(oldPath, newPath)
	if err != nil {
		return fmt.Errorf("compare: %w", err)
	}
	if o.html != "" {
		if err := writeFileAtomic(o.html, o.force, func(w io.Writer) error { return report.CompareHTML(w, c) }); err != nil {
			return fmt.Errorf("compare: --html: %w", err)
		}
	}
	if err := report.WriteCompare(stdout, o.format, c, report.DocOptions{}); err != nil {
		return fmt.Errorf("compare: write output: %w", err)
	}
	if o.failSet {
		if rs := c.Regressions(o.failOn); len(rs) > 0 {
			var names []string
			for _, r := range rs {
				what := "missing in new"
				switch {
				case r.Headline() != nil:
					what = fmt.Sprintf("%s %+.1f%%", c.Metrics[0].Title, r.Headline().Pct)
				case r.Status == report.StatusError:
					what = "now fails"
				}
				name := r.Name()
				if r.Group != "" {
					name += " (" + r.Group + ")"
				}
				names = append(names, name+" "+what)
			}
			return fmt.Errorf("compare: %d row%s regressed (worse by more than %g%% beyond the noise, failing or missing): %s",
				len(rs), map[bool]string{true: "", false: "s"}[len(rs) == 1], o.failOn, strings.Join(names, "; "))
		}
	}
	return nil
}
