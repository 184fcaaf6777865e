package iopath

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/auto"
)

// steer replaces Auto for the rest of the test.
//
// It also lowers ReadFile's small-file shortcut to 1 MiB, so that files of
// a few MiB reach Auto.
func steer(t *testing.T, fn func(auto.Workload) auto.Choice) {
	t.Helper()
	old, oldSmall := decide, smallFile
	decide, smallFile = fn, 1<<20
	t.Cleanup(func() { decide, smallFile = old, oldSmall })
}

// choose makes Auto answer c whatever the workload.
func choose(t *testing.T, c auto.Choice) {
	t.Helper()
	steer(t, func(auto.Workload) auto.Choice { return c })
}

func TestOptionErrors(t *testing.T) {
	for _, tc := range []struct {
		c    call
		opts []Option
		want string // substring of the error; "" = no error
	}{
		{callScan, nil, ""},
		{callScan, []Option{WithBlockSize(100)}, "iopath: block size 100 out of range [512, 64 MiB]"},
		{callScan, []Option{WithBlockSize(-1)}, "iopath: block size -1 out of range [512, 64 MiB]"},
		{callScan, []Option{WithBlockSize(65<<20 + 1)}, "out of range [512, 64 MiB]"},
		{callScan, []Option{WithBlockSize(0)}, ""},
		{callScan, []Option{WithBlockSize(512)}, ""},
		{callScan, []Option{WithBlockSize(64 << 20)}, ""},
		{callScan, []Option{WithBlockSize(6000), WithDirect()}, "block size 6000 must be a multiple of 4096 with WithDirect"},
		{callScan, []Option{WithBlockSize(8192), WithDirect()}, ""},
		{callScan, []Option{WithWorkers(-1)}, "iopath: workers -1 out of range [0, 1024]"},
		{callScan, []Option{WithWorkers(1025)}, "workers 1025 out of range"},
		{callScan, []Option{WithWorkers(1024)}, ""},
		{callScan, []Option{WithQueueDepth(-2)}, "iopath: queue depth -2 out of range [0, 4096]"},
		{callScan, []Option{WithQueueDepth(4097)}, "queue depth 4097 out of range"},
		{callScan, []Option{WithEngine("nope")}, `iopath: Scan: unknown engine "nope" (have read, pread, readv, mmap, io_uring)`},
		{callScan, []Option{WithEngine("null")}, `unknown engine "null"`},
		{callScan, []Option{WithEngine("raw")}, `unknown engine "raw"`},
		{callReadFile, []Option{WithEngine("readv")}, `iopath: ReadFile: unknown engine "readv" (have read, pread, mmap, io_uring)`},
		{callOpen, []Option{WithEngine("readv")}, `iopath: Open: unknown engine "readv" (have pread, io_uring, mmap)`},
		{callReadFiles, []Option{WithEngine("pread")}, `iopath: ReadFiles: unknown engine "pread" (have `},
		{callReadFiles, []Option{WithEngine("archive")}, `unknown engine "archive"`},
		{callReadFile, []Option{WithOrdered()}, "iopath: ReadFile: WithOrdered applies only to Scan"},
		{callOpen, []Option{WithOrdered()}, "WithOrdered applies only to Scan"},
		{callReadFiles, []Option{WithOrdered()}, "WithOrdered applies only to Scan"},
		{callScan, []Option{WithOrdered()}, ""},
		{callOpen, []Option{WithBlockSize(4096)}, "iopath: Open: WithBlockSize does not apply"},
		{callReadFiles, []Option{WithDirect()}, "iopath: ReadFiles: WithDirect does not apply"},
		{callScan, []Option{WithEngine("mmap"), WithDirect()}, "O_DIRECT with mmap is not supported"},
		{callScan, []Option{WithEngine("nope"), WithAuto()}, ""},
		{callScan, []Option{nil}, ""},
	} {
		_, err := parseOptions(tc.c, tc.opts)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s %d options: %v", tc.c, len(tc.opts), err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s %d options: got %v, want %q", tc.c, len(tc.opts), err, tc.want)
		}
	}
	if _, err := parseOptions(callScan, []Option{WithEngine("mmap"), WithDirect()}); !errors.Is(err, ErrNotSupported) {
		t.Errorf("mmap with O_DIRECT: %v does not wrap ErrNotSupported", err)
	}
}

// plan takes Auto's choice and puts the options' explicit values on top;
// an explicit engine gets its defaults and no call to Auto.
func TestPlan(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, make([]byte, 3<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	var seen []auto.Workload
	steer(t, func(w auto.Workload) auto.Choice {
		seen = append(seen, w)
		return auto.Choice{Engine: "readv", Workers: 2, QueueDepth: 16, BlockSize: 1 << 20, Rule: "r"}
	})
	w := auto.Workload{Kind: auto.Blocks, Path: path, Size: 3 << 20, Resident: -1}
	for _, tc := range []struct {
		c     call
		opts  []Option
		want  auto.Choice
		asked bool
	}{
		{callScan, nil, auto.Choice{Engine: "readv", Workers: 2, QueueDepth: 16, BlockSize: 1 << 20}, true},
		{callScan, []Option{WithWorkers(5), WithBlockSize(4096), WithQueueDepth(3)}, auto.Choice{Engine: "readv", Workers: 5, QueueDepth: 3, BlockSize: 4096}, true},
		{callScan, []Option{WithWorkers(0)}, auto.Choice{Engine: "readv", Workers: 2, QueueDepth: 16, BlockSize: 1 << 20}, true},
		// ReadFile and Open have no readv: pread reads the same way.
		{callReadFile, nil, auto.Choice{Engine: "pread", Workers: 2, QueueDepth: 16, BlockSize: 1 << 20}, true},
		{callOpen, nil, auto.Choice{Engine: "pread", Workers: 2, QueueDepth: 16, BlockSize: 1 << 20}, true},
		{callScan, []Option{WithEngine("mmap")}, auto.Choice{Engine: "mmap", Workers: 1}, false},
		{callScan, []Option{WithEngine("pread"), WithWorkers(3)}, auto.Choice{Engine: "pread", Workers: 3}, false},
		{callReadFiles, []Option{WithEngine("raw")}, auto.Choice{Engine: "raw"}, false},
	} {
		seen = nil
		o, err := parseOptions(tc.c, tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		got, err := plan(tc.c, &o, w)
		if err != nil {
			t.Fatal(err)
		}
		got.Rule, got.Reason = "", ""
		if got != tc.want || (len(seen) == 1) != tc.asked {
			t.Errorf("%s %d options: got %+v (Auto asked %d times), want %+v (asked: %v)", tc.c, len(tc.opts), got, len(seen), tc.want, tc.asked)
		}
	}
	// Auto is told about O_DIRECT, and its mmap is not used with it.
	o, _ := parseOptions(callScan, []Option{WithDirect()})
	steer(t, func(w auto.Workload) auto.Choice {
		seen = append(seen, w)
		return auto.Choice{Engine: "mmap", Workers: 1}
	})
	seen = nil
	if c, _ := plan(callScan, &o, w); c.Engine != "pread" || len(seen) != 1 || !seen[0].Direct {
		t.Errorf("direct: %+v, Auto saw %+v", c, seen)
	}
}

// The real Auto, with io_uring disabled: it never chooses io_uring, and
// says why when a rule would have.
func TestPlanAutoWithoutIOURing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, make([]byte, 2<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(features.DisableEnv, "1")
	for _, c := range []call{callReadFile, callScan, callOpen} {
		o, _ := parseOptions(c, []Option{WithDirect()})
		kind := map[call]auto.Kind{callReadFile: auto.WholeFile, callScan: auto.Blocks, callOpen: auto.Positioned}[c]
		ch, err := plan(c, &o, auto.Workload{Kind: kind, Path: path, Size: 2 << 20, Resident: -1})
		if err != nil {
			t.Fatal(err)
		}
		if ch.Engine == "io_uring" || ch.Workers < 1 {
			t.Errorf("%s: %+v", c, ch)
		}
		// Every direct rule prefers io_uring; its absence must be explained.
		if !strings.Contains(ch.Reason, features.DisableEnv) {
			t.Errorf("%s: the reason does not say io_uring is disabled: %q", c, ch.Reason)
		}
		o.engine = "io_uring"
		_, err = plan(c, &o, auto.Workload{Kind: kind, Path: path, Size: 2 << 20, Resident: -1})
		if !errors.Is(err, ErrNotSupported) || !strings.Contains(err.Error(), features.DisableEnv) {
			t.Errorf("%s WithEngine(io_uring): %v", c, err)
		}
	}
}
