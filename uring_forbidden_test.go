package iopath

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/iopath/iopath/batch"
	"github.com/iopath/iopath/engine"
	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/auto"
	"github.com/iopath/iopath/internal/seccomptest"
	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/internal/testenv"
)

// The tests here run their scenarios in a child process under a real
// seccomp filter (see internal/seccomptest): a filter cannot be removed,
// and the other tests of this package must keep io_uring.

// requireUring skips when this machine cannot use io_uring at all (the
// probe says why): a refusal can only be simulated where it is allowed.
func requireUring(t *testing.T) {
	t.Helper()
	if u := features.Probe().IOURing; !u.Available {
		t.Skipf("io_uring not supported here: %s", u.Reason)
	}
}

// forbiddenFiles writes n files of awkward sizes into a new directory and
// returns their paths and contents.
func forbiddenFiles(t *testing.T, n int) ([]string, map[string][]byte) {
	t.Helper()
	dir := t.TempDir()
	paths := make([]string, n)
	want := map[string][]byte{}
	for i := range paths {
		data := content(1+i*9973%(300<<10), uint64(i))
		paths[i] = filepath.Join(dir, fmt.Sprintf("f%03d", i))
		if err := os.WriteFile(paths[i], data, 0o644); err != nil {
			t.Fatal(err)
		}
		want[paths[i]] = data
	}
	return paths, want
}

// readAllFiles runs ReadFiles over paths and checks every file's bytes.
func readAllFiles(t *testing.T, paths []string, want map[string][]byte, opts ...Option) {
	t.Helper()
	var mu sync.Mutex
	seen := map[string]bool{}
	err := ReadFiles(context.Background(), paths, func(path string, data []byte, err error) error {
		mu.Lock()
		defer mu.Unlock()
		seen[path] = true
		if err != nil {
			return err
		}
		if !bytes.Equal(data, want[path]) {
			return fmt.Errorf("%s: %d bytes, want %d", path, len(data), len(want[path]))
		}
		return nil
	}, opts...)
	if err != nil {
		t.Fatalf("ReadFiles: %v", err)
	}
	if len(seen) != len(paths) {
		t.Fatalf("ReadFiles called fn for %d of %d files", len(seen), len(paths))
	}
}

// scanAll scans path and checks that every byte came, once, at its offset.
func scanAll(t *testing.T, path string, want []byte, opts ...Option) {
	t.Helper()
	got := make([]byte, len(want))
	var mu sync.Mutex
	var n int
	err := Scan(context.Background(), path, func(off int64, b []byte) error {
		mu.Lock()
		defer mu.Unlock()
		n += copy(got[off:], b)
		return nil
	}, append(opts, WithBlockSize(16<<10))...)
	if err != nil {
		t.Fatalf("Scan %v: %v", opts, err)
	}
	if n != len(want) || !bytes.Equal(got, want) {
		t.Fatalf("Scan %v: %d bytes delivered, content equal %v", opts, n, bytes.Equal(got, want))
	}
}

// With a seccomp filter that forbids io_uring_setup, io_uring_enter or
// io_uring_register, an explicit io_uring fails with ErrNotSupported and
// the reason, every time and leaking nothing, and Auto reads everything
// through its fallback.
func TestIOURingForbidden(t *testing.T) {
	requireUring(t)
	for _, call := range seccomptest.Calls() {
		t.Run(call, func(t *testing.T) {
			t.Parallel() // each runs in a process of its own
			seccomptest.Run(t, "TestIOURingForbiddenChild", []string{call})
		})
	}
}

func TestIOURingForbiddenChild(t *testing.T) {
	if !seccomptest.InChild() {
		t.Skip("the child half of TestIOURingForbidden: runs only under its seccomp filter")
	}
	call := seccomptest.Denied()[0]
	paths, want := forbiddenFiles(t, 24)
	big := paths[len(paths)-1]
	before := testenv.OpenFDs(t)
	refused := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrNotSupported) || !strings.Contains(err.Error(), call) {
			t.Fatalf("%s with %s forbidden: %v; want ErrNotSupported naming %s", what, call, err, call)
		}
	}
	for range 200 {
		data, err := ReadFile(big, WithEngine("io_uring"))
		if data != nil {
			t.Fatalf("ReadFile returned %d bytes with an error", len(data))
		}
		refused("ReadFile", err)
	}
	b, err := ReadFileBuf(big, WithEngine("io_uring"))
	if b != nil {
		b.Release()
	}
	refused("ReadFileBuf", err)
	f, err := Open(big, WithEngine("io_uring"))
	if f != nil {
		f.Close()
	}
	refused("Open", err)
	for _, o := range []named{{"Scan", nil}, {"ordered Scan", []Option{WithOrdered()}}} {
		err := Scan(context.Background(), big, func(int64, []byte) error { return nil }, append(o.opts, WithEngine("io_uring"))...)
		refused(o.name, err)
	}
	err = ReadFiles(context.Background(), paths, func(string, []byte, error) error { return nil }, WithEngine("io_uring"))
	refused("ReadFiles", err)
	if after := testenv.OpenFDs(t); after != before {
		t.Fatalf("%d descriptors open before the explicit io_uring calls, %d after", before, after)
	}

	// Auto, even steered to io_uring, reads everything.
	t.Setenv(auto.EnvEngine, "io_uring")
	readAllFiles(t, paths, want)
	for _, o := range []named{{"Auto", nil}, {"ordered", []Option{WithOrdered()}}, {"2 workers", []Option{WithWorkers(2)}}} {
		t.Run(o.name, func(t *testing.T) { scanAll(t, big, want[big], o.opts...) })
	}
	data, err := ReadFile(big)
	if err != nil || !bytes.Equal(data, want[big]) {
		t.Fatalf("ReadFile under Auto: %d bytes, %v", len(data), err)
	}
	f, err = Open(big)
	if err != nil {
		t.Fatalf("Open under Auto: %v", err)
	}
	buf := make([]byte, len(want[big]))
	n, err := f.ReadAt(buf, 0)
	f.Close()
	if n != len(buf) || !bytes.Equal(buf, want[big]) {
		t.Fatalf("ReadAt under Auto: %d bytes, %v", n, err)
	}
	if after := testenv.OpenFDs(t); after != before {
		t.Fatalf("%d descriptors open before, %d after", before, after)
	}
}

// kernel.io_uring_disabled set after the process first probed io_uring
// (simulated: the child probes, then forbids io_uring_setup): Auto still
// chooses io_uring from the cached probe, its rings are refused, and each
// entry point reads every file through the fallback.
func TestIOURingRefusedAfterProbe(t *testing.T) {
	requireUring(t)
	for _, api := range []string{"ReadFiles", "Scan", "ordered Scan", "ReadFile", "Open"} {
		t.Run(api, func(t *testing.T) {
			t.Parallel() // each runs in a process of its own
			seccomptest.Run(t, "TestIOURingRefusedAfterProbeChild", nil, "IOPATH_TEST_API="+api)
		})
	}
}

func TestIOURingRefusedAfterProbeChild(t *testing.T) {
	if !seccomptest.InChild() {
		t.Skip("the child half of TestIOURingRefusedAfterProbe: runs only in its child process")
	}
	api := os.Getenv("IOPATH_TEST_API")
	paths, want := forbiddenFiles(t, 40)
	big := paths[len(paths)-1]
	for _, p := range paths {
		dropPages(t, p, 0, 0) // cold, as in the report
	}
	t.Setenv(auto.EnvEngine, "") // the rules decide first
	if u := features.Probe().IOURing; !u.Available {
		t.Fatalf("io_uring unavailable before the filter: %s", u.Reason)
	}
	if err := seccomptest.Deny("io_uring_setup"); err != nil {
		t.Fatal(err)
	}
	kind := map[string]auto.Kind{"ReadFiles": auto.ManyFiles, "Scan": auto.Blocks, "ordered Scan": auto.Blocks,
		"ReadFile": auto.WholeFile, "Open": auto.Positioned}[api]
	w := auto.Workload{Kind: kind, Path: big, Resident: -1}
	if kind == auto.ManyFiles {
		w = auto.Workload{Kind: kind, Paths: paths, Resident: -1}
	}
	if c := auto.Decide(w, autoEngines()); c.Engine != "io_uring" {
		// Not the rules' choice for these files: steer Auto to it.
		t.Setenv(auto.EnvEngine, "io_uring")
		if c := auto.Decide(w, autoEngines()); c.Engine != "io_uring" {
			t.Fatalf("Auto chose %s (%s), not io_uring", c.Engine, c.Reason)
		}
	}
	switch api {
	case "ReadFiles":
		readAllFiles(t, paths, want)
	case "Scan":
		scanAll(t, big, want[big], WithWorkers(2))
	case "ordered Scan":
		scanAll(t, big, want[big], WithOrdered())
	case "ReadFile":
		data, err := ReadFile(big)
		if err != nil || !bytes.Equal(data, want[big]) {
			t.Fatalf("ReadFile: %d bytes, %v", len(data), err)
		}
	case "Open":
		f, err := Open(big)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		buf := make([]byte, len(want[big]))
		n, err := f.ReadAt(buf, 0)
		f.Close()
		if n != len(buf) || !bytes.Equal(buf, want[big]) {
			t.Fatalf("ReadAt: %d bytes, %v", n, err)
		}
	default:
		t.Fatalf("unknown API %q", api)
	}
	// The refusal is remembered: Auto no longer chooses io_uring.
	if u := features.Probe().IOURing; u.Available || u.Syscall != "io_uring_setup" {
		t.Errorf("the probe after the refusal: %+v", u)
	}
	if c := auto.Decide(w, autoEngines()); c.Engine == "io_uring" {
		t.Errorf("Auto still chooses io_uring after the refusal")
	}
}

// A ring that cannot be made for want of descriptors is reported as
// EMFILE, not as io_uring being unsupported.
// Whether the probe ran before (cached: available) or runs only now,
// short of descriptors itself.
func TestIOURingOutOfDescriptors(t *testing.T) {
	requireUring(t)
	for _, first := range []string{"probed before", "probed after"} {
		t.Run(first, func(t *testing.T) {
			t.Parallel() // each runs in a process of its own
			seccomptest.Run(t, "TestIOURingOutOfDescriptorsChild", nil, "IOPATH_TEST_PROBE="+first)
		})
	}
}

func TestIOURingOutOfDescriptorsChild(t *testing.T) {
	if !seccomptest.InChild() {
		t.Skip("the child half of TestIOURingOutOfDescriptors: runs only in its child process")
	}
	if os.Getenv("IOPATH_TEST_PROBE") == "probed before" && !features.Probe().IOURing.Available {
		t.Fatalf("io_uring unavailable: %s", features.Probe().IOURing.Reason)
	}
	path := writeFile(t, t.TempDir(), content(64<<10, 9))
	// Leave exactly one descriptor free: the file's. The limit is set,
	// then the holes below it filled, then one filler closed.
	var old sys.Rlimit
	if err := sys.Getrlimit(sys.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	lim := sys.Rlimit{Cur: uint64(len(ents) + 8), Max: old.Max}
	if err := sys.Setrlimit(sys.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	var fillers []int
	for {
		fd, err := sys.Open(os.DevNull, sys.O_RDONLY)
		if err != nil {
			if !errors.Is(err, syscall.EMFILE) {
				t.Fatal(err)
			}
			break
		}
		fillers = append(fillers, fd)
	}
	sys.Close(fillers[len(fillers)-1])
	fillers = fillers[:len(fillers)-1]
	defer func() {
		for _, fd := range fillers {
			sys.Close(fd)
		}
		sys.Setrlimit(sys.RLIMIT_NOFILE, &old)
	}()
	for _, c := range []struct {
		name string
		run  func() error
	}{
		{"Open", func() error {
			f, err := Open(path, WithEngine("io_uring"))
			if err == nil {
				f.Close()
			}
			return err
		}},
		{"ReadFile", func() error { _, err := ReadFile(path, WithEngine("io_uring")); return err }},
		{"ordered Scan", func() error {
			return Scan(context.Background(), path, func(int64, []byte) error { return nil }, WithEngine("io_uring"), WithOrdered())
		}},
	} {
		err := c.run()
		if !errors.Is(err, syscall.EMFILE) || errors.Is(err, ErrNotSupported) {
			t.Errorf("%s with one descriptor free: %v; want EMFILE, not ErrNotSupported", c.name, err)
		}
	}
	// No descriptor free: the io_uring engine's rings (with SQPOLL too)
	// and the batch engine's fail with EMFILE at setup.
	fd, err := sys.Open(os.DevNull, sys.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	fillers = append(fillers, fd)
	e, err := engine.Lookup("io_uring")
	if err != nil {
		t.Fatal(err)
	}
	for _, sqpoll := range []bool{false, true} {
		p, err := e.Prepare(engine.Job{Path: path, BlockSize: 4096, QueueDepth: 4, SQPoll: sqpoll})
		if err == nil {
			p.Close()
		}
		if !errors.Is(err, syscall.EMFILE) || errors.Is(err, ErrNotSupported) {
			t.Errorf("engine Prepare (SQPOLL %v) with no descriptor free: %v; want EMFILE, not ErrNotSupported", sqpoll, err)
		}
	}
	err = ReadFiles(context.Background(), []string{path}, func(string, []byte, error) error { return nil }, WithEngine("io_uring"))
	if !errors.Is(err, syscall.EMFILE) || errors.Is(err, ErrNotSupported) {
		t.Errorf("ReadFiles with no descriptor free: %v; want EMFILE, not ErrNotSupported", err)
	}
	// With descriptors free again the probe answers as before: running
	// short was not taken (nor cached) as io_uring being unavailable.
	for _, fd := range fillers {
		sys.Close(fd)
	}
	fillers = nil
	if u := features.Probe().IOURing; !u.Available {
		t.Errorf("running out of descriptors made io_uring unavailable: %s", u.Reason)
	}
}

// io_uring_enter refused in the middle of a process's life (a policy that
// changed after the probe and after a ring was set up): the engine's and
// batch's runs fail with ErrNotSupported and the reason, and the ring,
// which the kernel took no request of, is closed rather than kept for
// ever as one that failed with requests in flight.
func TestIOURingEnterRefusedMidRun(t *testing.T) {
	requireUring(t)
	seccomptest.Run(t, "TestIOURingEnterRefusedMidRunChild", nil)
}

func TestIOURingEnterRefusedMidRunChild(t *testing.T) {
	if !seccomptest.InChild() {
		t.Skip("the child half of TestIOURingEnterRefusedMidRun: runs only in its child process")
	}
	paths, _ := forbiddenFiles(t, 8)
	big := paths[len(paths)-1]
	before := testenv.OpenFDs(t)
	e, err := engine.Lookup("io_uring")
	if err != nil {
		t.Fatal(err)
	}
	pr, err := e.Prepare(engine.Job{Path: big, BlockSize: 16 << 10, QueueDepth: 8})
	if err != nil {
		t.Fatalf("Prepare before the filter: %v", err)
	}
	if err := seccomptest.Deny("io_uring_enter"); err != nil {
		t.Fatal(err)
	}
	// batch first: the engine's refusal below marks io_uring unavailable
	// for the process, after which batch would not set a ring up at all.
	be, err := batch.Lookup("io_uring")
	if err != nil {
		t.Fatal(err)
	}
	_, err = batch.Read(context.Background(), be, batch.Job{Paths: paths}, func(*batch.File) error { return nil })
	if !errors.Is(err, ErrNotSupported) || !strings.Contains(err.Error(), "io_uring_enter") {
		t.Errorf("batch: %v, want ErrNotSupported naming io_uring_enter", err)
	}
	_, err = pr.Run(context.Background(), engine.SinkFunc(func(int, int64, []byte) error { return nil }))
	if !errors.Is(err, ErrNotSupported) || !strings.Contains(err.Error(), "io_uring_enter") {
		t.Errorf("engine: %v, want ErrNotSupported naming io_uring_enter", err)
	}
	pr.Close()
	if after := testenv.OpenFDs(t); after != before {
		t.Errorf("%d descriptors open before, %d after: a ring the kernel took nothing of was kept", before, after)
	}
}
