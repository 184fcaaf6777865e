package main

import (
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/netns"
	"github.com/iopath/iopath/internal/profile"
	"github.com/iopath/iopath/perf"
	"github.com/iopath/iopath/report"
)

func init() { subcommands = append(subcommands, newFeaturesCmd) }

type featuresOptions struct {
	format string
}

func newFeaturesCmd(stdout, stderr io.Writer) *cobra.Command {
	var o featuresOptions
	cmd := &cobra.Command{
		Use:   "features",
		Short: "Show what this kernel and process support (io_uring, its ops and flags), and why not",
		Long: `features probes io_uring by setting up a tiny ring, asking it for its
opcodes and completing a NOP through it (io_uring_setup, io_uring_register
and io_uring_enter: a seccomp profile can forbid any one of them), and
prints whether this process can use it (and, if not, which call was
refused and why: kernel, sysctl, seccomp or memlock limit), which setup
flags and opcodes the kernel accepts, and the kernel, page size,
transparent hugepage mode and memlock limit, and where buffered reads
place their buffers within a page: the skew is measured on this machine
(a few milliseconds: a copy from memory into a buffer at each candidate skew),
since the best one differs between CPUs; IOPATH_BUFFER_SKEW=N sets it;
the routine that copies out of a mapping, measured the same way (memmove
against REP MOVSB); IOPATH_MAPPED_COPY=memmove|rep-movsb sets it;
the machine profile Auto reads (iopath tune makes it), and whether
--perf can record here (perf installed, perf_event_paranoid, kptr_restrict,
a seccomp profile), or how to allow it.
IOPATH_DISABLE_IO_URING=1 makes io_uring unavailable to iopath.`,
		Args: argsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !slices.Contains(report.KindFormats, o.format) {
				return usagef("features: --format %q: want one of %s", o.format, strings.Join(report.KindFormats, ", "))
			}
			r := *features.Probe()
			pl := features.BufferPlacement()
			r.BufferPlacement = &pl
			mc := features.MappedCopy()
			r.MappedCopy = &mc
			r.MachineProfile = profile.Look().Status
			if info, err := perf.Probe(); err != nil {
				r.Perf = strings.TrimPrefix(err.Error(), perf.ErrUnavailable.Error()+": ")
			} else {
				r.Perf = "perf " + info.Version + ": kernel and Go frames"
			}
			r.Loss = "available: root, ip and nft"
			if err := netns.Check(); err != nil {
				r.Loss = strings.TrimPrefix(err.Error(), netns.ErrUnavailable.Error()+": ")
			}
			return report.WriteFeatures(stdout, o.format, &r)
		},
	}
	cmd.Flags().StringVar(&o.format, "format", "table", "output: "+strings.Join(report.KindFormats, ", "))
	return cmd
}
