package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/units"
)

func init() { subcommands = append(subcommands, newFeaturesCmd) }

type featuresOptions struct {
	format string
}

// usedOps are the io_uring opcodes iopath's engines use: files, then sockets.
var usedOps = []string{"READ", "READ_FIXED", "READV", "OPENAT", "STATX", "CLOSE", "NOP",
	"ACCEPT", "RECV", "SEND", "SENDMSG", "SPLICE", "SHUTDOWN", "ASYNC_CANCEL"}

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
transparent hugepage mode and memlock limit.
IOPATH_DISABLE_IO_URING=1 makes io_uring unavailable to iopath.`,
		Args: argsUsage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch o.format {
			case "table", "json":
			default:
				return usagef("features: unknown format %q (want table or json)", o.format)
			}
			r := features.Probe()
			if o.format == "json" {
				enc := json.NewEncoder(stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(r)
			}
			return writeFeatures(stdout, r)
		},
	}
	cmd.Flags().StringVar(&o.format, "format", "table", "output: table or json")
	return cmd
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func writeFeatures(w io.Writer, r *features.Report) error {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 4, 2, ' ', 0)
	u := r.IOURing
	if u.Available {
		fmt.Fprintf(tw, "io_uring\tavailable\n")
	} else {
		why := u.Reason
		if u.Errno != "" {
			why = u.Errno + ": " + why
		}
		fmt.Fprintf(tw, "io_uring\tnot available: %s\n", why)
		if len(r.SetupFlags) > 0 || len(r.Ops) > 0 {
			fmt.Fprintf(tw, "\t(the flags and ops below are what the kernel offers; iopath will not use them)\n")
		}
	}
	if len(r.SetupFlags) > 0 {
		fmt.Fprintf(tw, "\t\n")
		for _, f := range r.SetupFlags {
			line := yesNo(f.Supported)
			if f.Note != "" {
				line += " (" + f.Note + ")"
			}
			fmt.Fprintf(tw, "setup flag %s\t%s\n", f.Name, line)
		}
	}
	if len(r.Ops) > 0 {
		fmt.Fprintf(tw, "\t\n")
		for _, op := range usedOps {
			fmt.Fprintf(tw, "op %s\t%s\n", op, yesNo(r.HasOp(op)))
		}
		for i, line := range wrapWords(r.Ops, 72) {
			label := ""
			if i == 0 {
				label = fmt.Sprintf("all ops (%d)", len(r.Ops))
			}
			fmt.Fprintf(tw, "%s\t%s\n", label, line)
		}
	}
	fmt.Fprintf(tw, "\t\n")
	fmt.Fprintf(tw, "kernel\t%s\n", r.Kernel)
	fmt.Fprintf(tw, "page size\t%d\n", r.PageSize)
	thp := r.THP
	if thp == "" {
		thp = "unknown"
	}
	fmt.Fprintf(tw, "transparent hugepages\t%s\n", thp)
	ml := "unlimited"
	if r.MemlockBytes >= 0 {
		ml = units.FormatSize(r.MemlockBytes)
	}
	fmt.Fprintf(tw, "memlock limit\t%s\n", ml)
	if err := tw.Flush(); err != nil {
		return err
	}
	// Separator rows are "\t\n" so that one alignment spans the table;
	// drop the padding they leave at line ends.
	for _, line := range strings.SplitAfter(buf.String(), "\n") {
		if _, err := io.WriteString(w, strings.TrimRight(line, " \n")+strings.Repeat("\n", strings.Count(line, "\n"))); err != nil {
			return err
		}
	}
	return nil
}

// wrapWords joins words with spaces into lines of at most width characters.
func wrapWords(words []string, width int) []string {
	var lines []string
	var b strings.Builder
	for _, w := range words {
		if b.Len() > 0 && b.Len()+1+len(w) > width {
			lines = append(lines, b.String())
			b.Reset()
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w)
	}
	if b.Len() > 0 {
		lines = append(lines, b.String())
	}
	return lines
}
