// Package perftest holds what the tests of --perf share across packages:
// the skip when perf cannot record here, and reading a written profile
// back as go tool pprof does.
package perftest

import (
	"os"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/iopath/iopath/perf"
)

// Need skips the test or benchmark when perf cannot record here (not
// installed, forbidden by a sysctl or a seccomp profile), saying why:
// CI installs perf, so there it never skips.
func Need(tb testing.TB) {
	tb.Helper()
	if _, err := perf.Probe(); err != nil {
		tb.Skipf("perf cannot record here: %v", err)
	}
}

// Read parses the pprof profile at path, failing the test when pprof
// could not read it.
func Read(tb testing.TB, path string) *profile.Profile {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		tb.Fatalf("%s: pprof cannot read it: %v", path, err)
	}
	return p
}
