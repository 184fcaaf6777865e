// Package testenv prepares the environment that the processes a test
// binary starts inherit. This project's tests start their own test binary
// again, many times: as the iopath command, as a benchmark child (one per
// run), as a server or load generator, under a seccomp filter.
//
// A binary built with -race sleeps a second when it exits (the race
// detector's atexit_sleep_ms, so that goroutines still running can report
// a race): a second per child, which made `go test -race ./...` spend
// most of its time asleep. TestMain of a package whose tests start
// children calls NoRaceExitSleep first thing.
//
// It also holds the descriptor counts the leak checks of every package
// share.
package testenv

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/iopath/iopath/internal/profile"
)

// NoRaceExitSleep makes the processes this one starts from now on exit
// without the race detector's sleep: it adds atexit_sleep_ms=0 to GORACE
// in this process's environment, unless GORACE already sets it. This
// process's own sleep is not changed (the runtime read GORACE as it
// started). A child that races is still caught: the detector reports a
// race when it happens and the child exits with status 66, which fails
// the test that started it.
func NoRaceExitSleep() {
	v := os.Getenv("GORACE")
	if strings.Contains(v, "atexit_sleep_ms") {
		return
	}
	os.Setenv("GORACE", strings.TrimSpace(v+" atexit_sleep_ms=0"))
}

// NoMachineProfile makes this process and its children read no machine
// profile (IOPATH_PROFILE=off), so that a profile the machine's user made
// with "iopath tune" does not change what Auto chooses in tests. Tests of
// the profile set one with profile.SetActive. Call it first in TestMain.
// A benchmark run with a profile names it in IOPATH_TEST_PROFILE, which
// then becomes IOPATH_PROFILE.
func NoMachineProfile() {
	v := "off"
	if p := os.Getenv(TestProfileEnv); p != "" {
		v = p
	}
	os.Setenv(profile.Env, v)
}

// TestProfileEnv names the machine profile benchmarks run with (see
// NoMachineProfile).
const TestProfileEnv = "IOPATH_TEST_PROFILE"

// OpenFDs counts this process's open file descriptors, from /proc/self/fd.
func OpenFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatalf("cannot count open file descriptors: %v", err)
	}
	return len(ents)
}

// CheckFDs fails t, when it ends, if more descriptors are open than when
// CheckFDs was called: a test that leaks one fails. It waits up to 5 s
// for the count to fall, as a closed socket may take a moment to leave
// the table while the runtime's poller holds its last reference.
// Cleanups run last-in first-out: call it before what it checks.
func CheckFDs(t testing.TB) {
	t.Helper()
	before := OpenFDs(t)
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for {
			after := OpenFDs(t)
			if after <= before {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("%d descriptors open after the test, %d before", after, before)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}
