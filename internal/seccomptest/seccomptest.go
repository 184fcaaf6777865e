// Package seccomptest runs tests under a seccomp filter that forbids
// chosen system calls, as a container's seccomp profile does, so that the
// paths iopath takes when io_uring is refused are tested for real, in CI,
// with nothing to install.
//
// A filter cannot be removed, so it is installed only in a child process:
// Run starts the test binary again, running one test, with DenyEnv naming
// the calls to forbid; TestMain calls Install first thing, which installs
// the filter before any test (or the command the binary stands in for)
// runs. A child test that must do something before the filter comes (probe
// io_uring, say) is started without DenyEnv and calls Deny itself.
//
// Linux only. Deny sets PR_SET_NO_NEW_PRIVS first, which lets a process
// without CAP_SYS_ADMIN install a filter: root is not needed.
package seccomptest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/iopath/iopath/internal/sys"
)

const (
	// DenyEnv names the system calls (comma-separated, "io_uring_enter")
	// that Install forbids.
	DenyEnv = "IOPATH_TEST_SECCOMP_DENY"
	// ChildEnv is set to 1 in every process Run starts.
	ChildEnv = "IOPATH_TEST_SECCOMP_CHILD"
)

// calls are the system calls Deny knows by name.
var calls = map[string]uintptr{
	"io_uring_setup":    sys.SYS_IO_URING_SETUP,
	"io_uring_enter":    sys.SYS_IO_URING_ENTER,
	"io_uring_register": sys.SYS_IO_URING_REGISTER,
	"openat2":           sys.SYS_OPENAT2,
}

// Calls returns the io_uring calls Deny knows, sorted: the ones a
// container's profile may refuse while io_uring is otherwise present.
// (Deny also knows openat2.)
func Calls() []string {
	var names []string
	for n := range calls {
		if strings.HasPrefix(n, "io_uring_") {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}

// Deny makes the named system calls fail with EPERM in this process and
// every process it starts, for good (see sys.DenySyscalls).
func Deny(names ...string) error {
	nrs := make([]uintptr, 0, len(names))
	for _, n := range names {
		nr, ok := calls[n]
		if !ok {
			return fmt.Errorf("seccomptest: unknown system call %q (known: %s, openat2)", n, strings.Join(Calls(), ", "))
		}
		nrs = append(nrs, nr)
	}
	return sys.DenySyscalls(nrs)
}

// Install forbids the calls DenyEnv names, if any. TestMain calls it
// before anything else; it exits with status 3 when the filter cannot be
// installed, so that the parent test fails rather than passes unfiltered.
func Install() {
	v := os.Getenv(DenyEnv)
	if v == "" {
		return
	}
	if err := Deny(strings.Split(v, ",")...); err != nil {
		fmt.Fprintf(os.Stderr, "%s=%s: %v\n", DenyEnv, v, err)
		os.Exit(3)
	}
}

// InChild reports whether this process was started by Run.
func InChild() bool { return os.Getenv(ChildEnv) == "1" }

// Denied returns the calls DenyEnv names in this process (nil: none).
func Denied() []string {
	if v := os.Getenv(DenyEnv); v != "" {
		return strings.Split(v, ",")
	}
	return nil
}

// Run runs the test named test (a top-level test function of the same
// binary) in a child process under a filter that forbids deny (none: the
// child installs what it needs itself), with env added to its
// environment. It fails t when the child fails or runs no test, and
// returns the child's output.
func Run(t testing.TB, test string, deny []string, env ...string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), ChildEnv+"=1", DenyEnv+"="+strings.Join(deny, ","))
	cmd.Env = append(cmd.Env, env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil {
		t.Fatalf("%s in a child process denying %v: %v\n%s", test, deny, err, out.String())
	}
	if !strings.Contains(out.String(), "--- PASS: "+test) {
		t.Fatalf("%s in a child process denying %v did not pass:\n%s", test, deny, out.String())
	}
	return out.String()
}
