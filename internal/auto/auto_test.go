package auto

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/iopath/iopath/batch"
	"github.com/iopath/iopath/engine"
	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/testenv"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	testenv.NoMachineProfile()
	goleak.VerifyTestMain(m)
}

// allOps are the io_uring opcodes the engines use.
var allOps = []string{"NOP", "READ", "READ_FIXED", "OPENAT", "STATX", "CLOSE", "ASYNC_CANCEL"}

// realEngines is what the root package tells auto: the registries and
// the probe of this process.
func realEngines() Engines {
	return Engines{File: engine.Names(), Many: batch.Names(), IOURing: features.HaveOps}
}

// fakeURing answers as features.HaveOps would on a kernel 6.18.0 with
// the opcodes have; a nil have is io_uring refused with noUringReason.
func fakeURing(have []string) func(ops ...string) error {
	return func(ops ...string) error {
		if have == nil {
			return errors.New("io_uring is not supported: " + noUringReason)
		}
		for _, op := range ops {
			if !slices.Contains(have, op) {
				return fmt.Errorf("io_uring is not supported: kernel 6.18.0 lacks IORING_OP_%s", op)
			}
		}
		return nil
	}
}

// testEngines is Engines with the engine names of this build and a fake
// probe that has the opcodes have.
func testEngines(have []string) Engines {
	return Engines{File: engine.Names(), Many: batch.Names(), IOURing: fakeURing(have)}
}

// withUring is an Env where io_uring works, with g procs.
func withUring(g int) Env {
	return Env{Engines: testEngines(allOps), GOMAXPROCS: g}
}

// noUringReason is the probe's reason in withoutUring.
const noUringReason = "io_uring_setup: operation not permitted (kernel.io_uring_disabled=2)"

// withoutUring is an Env where io_uring cannot be set up, with g procs.
func withoutUring(g int) Env {
	return Env{Engines: testEngines(nil), GOMAXPROCS: g}
}

// withoutOp is an Env where io_uring works without opcode op.
func withoutOp(g int, op string) Env {
	return Env{Engines: testEngines(slices.DeleteFunc(slices.Clone(allOps), func(o string) bool { return o == op })), GOMAXPROCS: g}
}

func testEnvs() []Env {
	return []Env{
		withUring(1), withUring(2), withUring(64), withoutUring(1), withoutUring(2), withoutUring(64),
		withoutOp(2, "STATX"), withoutOp(2, "READ_FIXED"), {GOMAXPROCS: 0}, {GOMAXPROCS: -3},
	}
}

func describe(env Env) string {
	u := "no probe"
	if env.IOURing != nil {
		u = fmt.Sprintf("io_uring with the engines' ops: %v", env.IOURing(allOps...))
	}
	return fmt.Sprintf("env{GOMAXPROCS %d, %s, override %q}", env.GOMAXPROCS, u, env.Override)
}

// The sizes and residencies used by the cases.
const (
	big  = 1 << 30
	tiny = 4 << 10
)

// TestRules checks each rule's decision (one case per rule), then the
// edges around them.
func TestRules(t *testing.T) {
	type want struct {
		rule, engine string
		workers, qd  int
		bs           int
		reason       []string // substrings of Reason
	}
	cases := []struct {
		name string
		w    Workload
		env  Env
		want want
	}{
		// One case per rule, in the table's order.
		{"many-uncached", Workload{Kind: ManyFiles, Size: tiny, Resident: 0}, withUring(2),
			want{rule: "many-uncached", engine: "io_uring", workers: 2, qd: manyDepth}},
		{"many-uncached-no-uring", Workload{Kind: ManyFiles, Size: tiny, Resident: 0}, withoutUring(2),
			want{rule: "many-uncached-no-uring", engine: "raw", workers: ioWorkers, reason: []string{noUringReason, "many-uncached"}}},
		{"many-cached", Workload{Kind: ManyFiles, Size: tiny, Resident: 1}, withUring(2),
			want{rule: "many-cached", engine: "raw", workers: 2}},
		{"direct", Workload{Kind: Blocks, Size: big, Direct: true, Resident: 1}, withUring(2),
			want{rule: "direct", engine: "io_uring", workers: 1, qd: uringQD}},
		{"direct-no-uring", Workload{Kind: WholeFile, Size: big, Direct: true, Resident: 0}, withoutUring(2),
			want{rule: "direct-no-uring", engine: "pread", workers: 2, bs: directBlock, reason: []string{noUringReason}}},
		{"small-file", Workload{Kind: WholeFile, Size: tiny, Resident: 0}, withUring(2),
			want{rule: "small-file", engine: "pread", workers: 1}},
		{"mid-uncached-blocks", Workload{Kind: Blocks, Size: SmallFile, Resident: 0}, withUring(2),
			want{rule: "mid-uncached-blocks", engine: "pread", workers: 1}},
		{"big-uncached", Workload{Kind: Blocks, Size: big, Resident: 0}, withUring(2),
			want{rule: "big-uncached", engine: "pread", workers: 2}},
		{"mid-uncached whole file", Workload{Kind: WholeFile, Size: midColdMax - 1, Resident: 0}, withUring(2),
			want{rule: "big-uncached", engine: "pread", workers: 2}},
		{"mid-cached blocks", Workload{Kind: Blocks, Size: midColdMax - 1, Resident: 1}, withUring(2),
			want{rule: "big-cached", engine: "pread", workers: 2}},
		{"mid-cached-whole", Workload{Kind: WholeFile, Size: SmallFile, Resident: 1}, withUring(2),
			want{rule: "mid-cached-whole", engine: "read", workers: 1}},
		{"mid-cached-whole unknown residency", Workload{Kind: WholeFile, Size: midWholeMax - 1, Resident: -1}, withUring(2),
			want{rule: "mid-cached-whole", engine: "read", workers: 1}},
		{"big-cached whole", Workload{Kind: WholeFile, Size: midWholeMax, Resident: 1}, withUring(2),
			want{rule: "big-cached", engine: "pread", workers: 2}},
		{"big-cached", Workload{Kind: WholeFile, Size: big, Resident: 1}, withUring(2),
			want{rule: "big-cached", engine: "pread", workers: 2}},
		{"positioned-direct", Workload{Kind: Positioned, Size: big, Direct: true, Resident: 1}, withUring(2),
			want{rule: "positioned-direct", engine: "io_uring", workers: 2, qd: uringQD}},
		{"positioned-direct-no-uring", Workload{Kind: Positioned, Size: big, Direct: true, Resident: 1}, withoutUring(2),
			want{rule: "positioned-direct-no-uring", engine: "pread", workers: ioWorkers, reason: []string{noUringReason}}},
		{"positioned-cached-mmap", Workload{Kind: Positioned, Size: big, Resident: 1}, withUring(2),
			want{rule: "positioned-cached-mmap", engine: "mmap", workers: 2}},
		{"positioned", Workload{Kind: Positioned, Size: big, Resident: 0.5}, withUring(2),
			want{rule: "positioned", engine: "io_uring", workers: 2, qd: uringQD}},
		{"positioned-uncached-no-uring", Workload{Kind: Positioned, Size: big, Resident: 0}, withoutUring(2),
			want{rule: "positioned-uncached-no-uring", engine: "pread", workers: ioWorkers, reason: []string{noUringReason}}},
		{"positioned-cached-no-uring", Workload{Kind: Positioned, Size: big, Resident: mappedAt - 0.01}, withoutUring(2),
			want{rule: "positioned-cached-no-uring", engine: "pread", workers: 2, reason: []string{noUringReason}}},

		// Thresholds, exactly at and just below.
		{"size-at-threshold", Workload{Kind: Blocks, Size: SmallFile, Resident: 1}, withUring(2),
			want{rule: "big-cached", engine: "pread", workers: 2}},
		{"size-below-threshold", Workload{Kind: Blocks, Size: SmallFile - 1, Resident: 1}, withUring(2),
			want{rule: "small-file", engine: "pread", workers: 1}},
		{"resident-at-threshold", Workload{Kind: Blocks, Size: big, Resident: cachedAt}, withUring(2),
			want{rule: "big-cached", engine: "pread", workers: 2}},
		{"resident-below-threshold", Workload{Kind: Blocks, Size: big, Resident: cachedAt - 0.01}, withUring(2),
			want{rule: "big-uncached", engine: "pread", workers: 2}},
		{"mapped-at-threshold", Workload{Kind: Positioned, Size: big, Resident: mappedAt}, withUring(2),
			want{rule: "positioned-cached-mmap", engine: "mmap", workers: 2}},
		{"mapped-below-threshold", Workload{Kind: Positioned, Size: big, Resident: mappedAt - 0.001}, withUring(2),
			want{rule: "positioned", engine: "io_uring", workers: 2, qd: uringQD}},
		{"mapped-no-uring", Workload{Kind: Positioned, Size: big, Resident: 1}, withoutUring(2),
			want{rule: "positioned-cached-mmap", engine: "mmap", workers: 2}},
		{"mapped-not-direct", Workload{Kind: Positioned, Size: big, Resident: 1, Direct: true}, withUring(2),
			want{rule: "positioned-direct", engine: "io_uring", workers: 2, qd: uringQD}},
		{"many-resident-at-threshold", Workload{Kind: ManyFiles, Resident: cachedAt}, withUring(2),
			want{rule: "many-cached", engine: "raw", workers: 2}},
		{"many-resident-below-threshold", Workload{Kind: ManyFiles, Resident: cachedAt - 0.01}, withUring(2),
			want{rule: "many-uncached", engine: "io_uring", workers: 2, qd: manyDepth}},

		// Residency unknown counts as cached.
		{"unknown-big", Workload{Kind: Blocks, Size: big, Resident: -1}, withUring(2),
			want{rule: "big-cached", engine: "pread", workers: 2}},
		{"unknown-many", Workload{Kind: ManyFiles, Resident: -1}, withUring(2),
			want{rule: "many-cached", engine: "raw", workers: 2}},
		{"unknown-positioned", Workload{Kind: Positioned, Size: big, Resident: -1}, withoutUring(2),
			want{rule: "positioned-cached-no-uring", engine: "pread", workers: 2}},
		{"unknown-size", Workload{Kind: WholeFile, Resident: -1}, withUring(2),
			want{rule: "small-file", engine: "pread", workers: 1}},

		// GOMAXPROCS: 1, nonsense, and many cores.
		{"procs-1-big", Workload{Kind: Blocks, Size: big, Resident: 1}, withUring(1),
			want{rule: "big-cached", engine: "pread", workers: 1}},
		{"procs-1-many", Workload{Kind: ManyFiles, Resident: 1}, withUring(1),
			want{rule: "many-cached", engine: "raw", workers: 1}},
		{"procs-1-many-uncached", Workload{Kind: ManyFiles, Resident: 0}, withUring(1),
			want{rule: "many-uncached", engine: "io_uring", workers: 1, qd: manyDepth}},
		{"procs-1-big-uncached", Workload{Kind: Blocks, Size: big, Resident: 0}, withUring(1),
			want{rule: "big-uncached", engine: "pread", workers: 1}},
		{"procs-0", Workload{Kind: Positioned, Size: big, Resident: 0.5}, Env{Engines: withUring(1).Engines},
			want{rule: "positioned", engine: "io_uring", workers: 1, qd: uringQD}},
		{"procs-64-big", Workload{Kind: Blocks, Size: big, Resident: 1}, withUring(64),
			want{rule: "big-cached", engine: "pread", workers: maxCPUWorkers}},
		{"procs-64-many-uncached", Workload{Kind: ManyFiles, Resident: 0}, withUring(64),
			want{rule: "many-uncached", engine: "io_uring", workers: maxRings, qd: manyDepth}},

		// io_uring unusable: the probe's reason, or the opcode, in Reason.
		{"no-probe", Workload{Kind: ManyFiles, Resident: 0}, Env{GOMAXPROCS: 2},
			want{rule: "many-uncached-no-uring", engine: "raw", workers: ioWorkers, reason: []string{"not probed"}}},
		{"no-statx", Workload{Kind: ManyFiles, Resident: 0}, withoutOp(2, "STATX"),
			want{rule: "many-uncached-no-uring", engine: "raw", workers: ioWorkers, reason: []string{"IORING_OP_STATX"}}},
		{"no-async-cancel", Workload{Kind: ManyFiles, Resident: 0}, withoutOp(2, "ASYNC_CANCEL"),
			want{rule: "many-uncached-no-uring", engine: "raw", workers: ioWorkers, reason: []string{"IORING_OP_ASYNC_CANCEL"}}},
		{"no-read-fixed-one-file", Workload{Kind: Blocks, Size: big, Direct: true}, withoutOp(2, "READ_FIXED"),
			want{rule: "direct", engine: "io_uring", workers: 1, qd: uringQD}},
		{"no-read-at-all", Workload{Kind: Blocks, Size: big, Direct: true}, func() Env {
			env := withUring(2)
			env.IOURing = fakeURing([]string{"NOP"})
			return env
		}(), want{rule: "direct-no-uring", engine: "pread", workers: 2, bs: directBlock, reason: []string{"IORING_OP_READ"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := Choose(tc.w, tc.env)
			w := tc.want
			if c.Rule != w.rule || c.Engine != w.engine || c.Workers != w.workers || c.QueueDepth != w.qd || c.BlockSize != w.bs {
				t.Errorf("Choose(%+v, %s) = %+v\nwant rule %s, %s ×%d qd %d bs %d", tc.w, describe(tc.env), c, w.rule, w.engine, w.workers, w.qd, w.bs)
			}
			for _, s := range w.reason {
				if !strings.Contains(c.Reason, s) {
					t.Errorf("Reason %q does not say %q", c.Reason, s)
				}
			}
		})
	}
}

// TestOverride checks IOPATH_ENGINE: taken when valid for the Kind and
// available, else ignored with the reason in Reason.
func TestOverride(t *testing.T) {
	bigWarm := Workload{Kind: Blocks, Size: big, Resident: 1}
	manyCold := Workload{Kind: ManyFiles, Resident: 0}
	cases := []struct {
		name     string
		w        Workload
		env      Env
		override string
		rule     string // RuleOverride when taken
		engine   string
		workers  int
		qd       int
		reason   []string
	}{
		{"valid", bigWarm, withUring(2), "pread", RuleOverride, "pread", 2, 0, []string{"IOPATH_ENGINE=pread", "big-cached"}},
		{"valid-spaces", bigWarm, withUring(2), " pread\n", RuleOverride, "pread", 2, 0, nil},
		{"valid-io_uring", bigWarm, withUring(2), "io_uring", RuleOverride, "io_uring", 2, uringQD, nil},
		{"valid-same-as-rule", manyCold, withUring(2), "io_uring", RuleOverride, "io_uring", 2, manyDepth, nil},
		{"valid-many", manyCold, withUring(2), "readfile", RuleOverride, "readfile", 1, 0, nil},
		{"valid-pool", manyCold, withUring(2), "pool", RuleOverride, "pool", poolWorkers, 0, nil},
		{"valid-raw-for-cold", manyCold, withUring(2), "raw", RuleOverride, "raw", 2, 0, nil},
		{"invalid-name", bigWarm, withUring(2), "sendfile", "big-cached", "pread", 2, 0, []string{"IOPATH_ENGINE=sendfile ignored", "no such engine", "pread"}},
		{"wrong-kind-batch-for-file", bigWarm, withUring(2), "raw", "big-cached", "pread", 2, 0, []string{"IOPATH_ENGINE=raw ignored", "many files"}},
		{"wrong-kind-file-for-batch", manyCold, withUring(2), "pread", "many-uncached", "io_uring", 2, manyDepth, []string{"IOPATH_ENGINE=pread ignored", "one file"}},
		{"archive", manyCold, withUring(2), "archive", "many-uncached", "io_uring", 2, manyDepth, []string{"IOPATH_ENGINE=archive ignored", "archive"}},
		{"null", bigWarm, withUring(2), "null", "big-cached", "pread", 2, 0, []string{"IOPATH_ENGINE=null ignored", "no data"}},
		{"unavailable", bigWarm, withoutUring(2), "io_uring", "big-cached", "pread", 2, 0, []string{"IOPATH_ENGINE=io_uring ignored", noUringReason}},
		{"unavailable-op", manyCold, withoutOp(2, "OPENAT"), "io_uring", "many-uncached-no-uring", "raw", ioWorkers, 0, []string{"IOPATH_ENGINE=io_uring ignored", "IORING_OP_OPENAT"}},
		{"mmap-direct", Workload{Kind: WholeFile, Size: big, Direct: true}, withUring(2), "mmap", "direct", "io_uring", 1, uringQD, []string{"IOPATH_ENGINE=mmap ignored", "O_DIRECT"}},
		{"mmap-direct-positioned", Workload{Kind: Positioned, Size: big, Direct: true}, withoutUring(2), "mmap", "positioned-direct-no-uring", "pread", ioWorkers, 0, []string{"O_DIRECT"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := tc.env
			env.Override = tc.override
			c := Choose(tc.w, env)
			if c.Rule != tc.rule || c.Engine != tc.engine || c.Workers != tc.workers || c.QueueDepth != tc.qd {
				t.Errorf("Choose = %+v\nwant rule %s, %s ×%d qd %d", c, tc.rule, tc.engine, tc.workers, tc.qd)
			}
			for _, s := range tc.reason {
				if !strings.Contains(c.Reason, s) {
					t.Errorf("Reason %q does not say %q", c.Reason, s)
				}
			}
		})
	}
}

// TestCurrentEnv checks that CurrentEnv reads IOPATH_ENGINE and the
// probe, and that Decide follows both.
func TestCurrentEnv(t *testing.T) {
	t.Setenv(EnvEngine, "readv")
	env := CurrentEnv(realEngines())
	if env.Override != "readv" || env.IOURing == nil || env.GOMAXPROCS < 1 {
		t.Fatalf("CurrentEnv(realEngines()) = %s", describe(env))
	}
	if c := Decide(Workload{Kind: Blocks, Size: big, Resident: 1}, realEngines()); c.Engine != "readv" || c.Rule != RuleOverride {
		t.Errorf("Decide with %s=readv: %+v", EnvEngine, c)
	}
	t.Setenv(EnvEngine, "")
	t.Setenv(features.DisableEnv, "1")
	c := Decide(Workload{Kind: ManyFiles, Resident: 0}, realEngines())
	if c.Engine == "io_uring" || !strings.Contains(c.Reason, features.DisableEnv) {
		t.Errorf("Decide with %s=1: %+v; want no io_uring and the reason", features.DisableEnv, c)
	}
}
