// Command iopath measures Linux's file I/O paths side by side and reads files
// through any of them. Run "iopath --help" for the commands.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"
)

// version is iopath's version, stamped by -ldflags "-X main.version=..."
// in releases; otherwise the module version or VCS revision Go recorded.
var version = buildVersion()

func buildVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "+dirty"
	}
	return "devel " + rev
}

// usageError marks an error caused by bad flags or arguments (exit code 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

func main() {
	os.Exit(mainCode(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// exitCode prints err as one line and maps it to the exit status: 0 for
// success, 2 for bad usage, 1 for a failed operation. (mainCode adds the
// status of an interrupt.)
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "iopath: %s\n", oneLine(err.Error()))
	var ue usageError
	if errors.As(err, &ue) {
		return 2
	}
	return 1
}

// oneLine escapes, as quotePath would, every character of msg that does
// not print as itself (a newline, a terminal escape, a byte that is not
// UTF-8), so that the last line iopath prints is one line and carries
// nothing the terminal would act on, whatever an error quotes. Paths the
// commands quote already pass unchanged.
func oneLine(msg string) string {
	var b strings.Builder
	for i, w := 0, 0; i < len(msg); i += w {
		_, w = utf8.DecodeRuneInString(msg[i:])
		c := msg[i : i+w]
		if q := quotePath(c); q != c {
			c = q[1 : len(q)-1] // "\n" without its quotes
		}
		b.WriteString(c)
	}
	return b.String()
}

// run is the whole program: main only wires the process to it, so that
// tests can call it with their own arguments and writers.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	root := newRootCmd(stdin, stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err != nil && strings.HasPrefix(err.Error(), "unknown command ") {
		// cobra's own check of the command name: bad usage.
		return usageError{fmt.Errorf("%w (see iopath --help)", err)}
	}
	return err
}

func newRootCmd(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "iopath",
		Short: "Measure Linux's file I/O paths side by side, and read files through the fastest",
		Long: `iopath reads files through each of Linux's I/O paths (read, pread, readv,
mmap, io_uring), checks every byte, and prints one honest side-by-side table
of throughput, CPU, latency, syscalls, faults and context switches.

Ctrl-C (SIGINT), SIGTERM or SIGHUP stops any command within a second: it
removes its temporary files and ends its child processes. A second signal
stops it at once. Errors are one line on stderr, "iopath: ...".

Exit status: 0 success, 1 a failed operation, 2 bad usage (flags,
arguments), 128+N stopped by signal N (130 for Ctrl-C, 143 for SIGTERM);
net serve, whose first signal is its way to stop (it drains its
connections), exits 0 then, and 128+N on a second signal.`,
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{fmt.Errorf("%s: %w (see %s --help)", strings.TrimPrefix(c.CommandPath(), "iopath "), err, c.CommandPath())}
	})
	for _, add := range subcommands {
		root.AddCommand(add(stdout, stderr))
	}
	return root
}

// subcommands are added by the files that define them (one file per
// subcommand), each from an init function.
var subcommands []func(stdout, stderr io.Writer) *cobra.Command

// exactArgs and friends make cobra's argument errors usage errors.
func argsUsage(v cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := v(cmd, args); err != nil {
			return usageError{fmt.Errorf("%s: %w", strings.TrimPrefix(cmd.CommandPath(), "iopath "), err)}
		}
		return nil
	}
}
