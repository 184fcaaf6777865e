package metrics

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"
)

func TestProcessCPUSelf(t *testing.T) {
	u0, s0, err := ProcessCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	r0, err := SelfUsage()
	if err != nil {
		t.Fatal(err)
	}
	// Burn until getrusage says 300 ms of CPU went by: /proc must see
	// the same work, within its 10 ms ticks (and a little scheduling
	// slack between the two readings).
	x := 1
	for {
		for i := 0; i < 1e6; i++ {
			x = x*31 + i
		}
		r, _ := SelfUsage()
		if d := r.Sub(r0); d.User+d.System >= 300*time.Millisecond {
			break
		}
	}
	_ = x
	u1, s1, err := ProcessCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	r1, _ := SelfUsage()
	got := (u1 - u0) + (s1 - s0)
	want := r1.Sub(r0)
	if got < 250*time.Millisecond || got > want.User+want.System+50*time.Millisecond {
		t.Fatalf("/proc/self/stat says %v of CPU, getrusage %v", got, want.User+want.System)
	}
	if u1 < u0 || s1 < s0 {
		t.Fatalf("CPU time went backwards: user %v→%v sys %v→%v", u0, u1, s0, s1)
	}
}

func TestProcessCPUNoProcess(t *testing.T) {
	// PIDs are at most 2^22 on Linux.
	_, _, err := ProcessCPU(1 << 30)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err = %v, want not-exist", err)
	}
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Path != "/proc/1073741824/stat" {
		t.Fatalf("err %v does not name the path", err)
	}
}

func TestParsePIDStat(t *testing.T) {
	// Fields 3..: state ppid pgrp session tty tpgid flags minflt cminflt
	// majflt cmajflt utime stime cutime cstime ...
	tail := " S 1 2 3 4 5 6 7 8 9 10 250 75 999 888 20 0 1\n"
	// comm is at most 15 bytes but may hold anything but NUL.
	for _, name := range []string{"iopath", "a b", "a) b", "((x)) ) (y", "", ") S 1 2 3"} {
		comm := "(" + name + ")"
		u, s, err := parsePIDStat("stat", []byte("4242 "+comm+tail))
		if err != nil {
			t.Fatalf("comm %s: %v", comm, err)
		}
		if u != 2500*time.Millisecond || s != 750*time.Millisecond {
			t.Errorf("comm %s: user %v sys %v, want 2.5s 750ms", comm, u, s)
		}
	}
	for _, bad := range []string{
		"",
		"4242 iopath S 1 2 3 4 5 6 7 8 9 10 250 75 0 0", // no parentheses
		"4242 (iopath) S 1 2 3 4 5 6 7 8 9 10 250",      // stime missing
		"4242 (iopath) S 1 2 3 4 5 6 7 8 9 10 x 75 0 0", // utime not a number
		"4242 (iopath) S 1 2 3 4 5 6 7 8 9 10 250 -1 0", // negative stime
		// a ')' in the tail moves the anchor: too few fields after it
		"4242 (iopath) S 1 2 3 4 5 6 7 8 9 10 250 75 0 0 )",
	} {
		if _, _, err := parsePIDStat("/proc/4242/stat", []byte(bad)); err == nil {
			t.Errorf("parsePIDStat(%q) accepted", bad)
		} else if !strings.Contains(err.Error(), "/proc/4242/stat") {
			t.Errorf("error %q does not name the file", err)
		}
	}
}
