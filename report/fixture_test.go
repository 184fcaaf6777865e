package report

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/iopath/iopath/bench"
	"github.com/iopath/iopath/features"
)

// sweepSample is a hand-built report of a sweep: block sizes × queue
// depths for several engines in two cache states, with fio twin rows, a
// failed row, noisy runs and io_uring kernel-thread CPU. Its figures are
// made up but shaped like real ones (and deterministic). It feeds the
// golden tests of every renderer and the rendering benchmarks.
func sweepSample(bss, qds []int, engines []string, fio bool) *bench.Report {
	const gib = 1 << 30
	twin := map[string]string{"read": "sync", "pread": "psync", "readv": "pvsync", "mmap": "mmap", "io_uring": "io_uring"}
	queue := map[string]bool{"io_uring": true}
	var results []bench.Result
	mk := func(tool, eng, tw, cache string, bs, qd int, speed float64) bench.Result {
		bps := speed * gib
		runs := []bench.Run{}
		for i, f := range []float64{0.97, 1.0, 1.02} {
			b := bps * f
			wall := int64(float64(1<<30) / b * 1e9)
			r := bench.Run{Passes: 1, Bytes: 1 << 30, Blocks: int64((1 << 30) / bs), WallNs: wall, BytesPerS: b,
				UserNs: wall / 5, SysNs: wall / 2, Syscalls: int64((1 << 30) / bs), ResidentBefore: 1, ResidentAfter: 1,
				LatP50Ns: int64(float64(bs) / b * 1e9), LatP99Ns: int64(3 * float64(bs) / b * 1e9)}
			if cache == "cold" {
				r.ResidentBefore, r.ResidentAfter = 0, 1
			}
			if tool == bench.ToolIopath && i == 2 && eng == "mmap" {
				r.OtherCPUPct = 37.5
				r.Noisy = "another process used 38% of a core"
			}
			runs = append(runs, r)
		}
		p50 := int64(float64(bs) / bps * 1e9)
		res := bench.Result{
			Tool: tool, Engine: eng, Twin: tw, Cache: cache, Pattern: "seq", BS: bs, Workers: 1, QD: qd,
			Consume: "none", Runs: runs, MinTimeNs: int64(time.Second),
			BytesPerS: bps, BytesPerSMin: bps * 0.97, BytesPerSMax: bps * 1.02, IOPS: bps / float64(bs),
			CPUSPerGiB: 0.7 / speed, UsrPct: 20, SysPct: 50,
			LatP50Ns: p50, LatP90Ns: p50 * 3 / 2, LatP99Ns: p50 * 3, LatP999Ns: p50 * 9, LatP9999Ns: p50 * 40, LatMaxNs: p50 * 100,
			Syscalls: int64((1 << 30) / bs), MinFlt: 300, NVCSw: 2, NIVCSw: 5,
		}
		if tool == bench.ToolFio {
			res.Syscalls = -1
			res.Notes = []string{"fio " + eng + " twin of " + tw}
		}
		if eng == "mmap" && tool == bench.ToolIopath {
			res.NoisyRuns = 1
		}
		if eng == "io_uring" && tool == bench.ToolIopath {
			res.IOThreadCPUSPerGiB = 0.01
		}
		return res
	}
	for _, cache := range []string{"warm", "cold"} {
		for _, bs := range bss {
			for qi, qd := range qds {
				for ei, eng := range engines {
					if !queue[eng] && qi > 0 {
						continue
					}
					q := 0
					if queue[eng] {
						q = qd
					}
					// Throughput grows with block size and depth, and
					// differs by engine and cache state.
					speed := (1 + float64(ei)/4) * math.Log2(float64(bs)/512) * (1 + math.Log2(float64(q+1))/8)
					if cache == "cold" {
						speed /= 5
					}
					r := mk(bench.ToolIopath, eng, "", cache, bs, q, speed)
					if eng == "readv" && cache == "cold" && bs == bss[len(bss)-1] {
						r.Error = "child process failed: signal: killed: injected failure"
						r.Runs = r.Runs[:1]
						r.Runs[0].Error = r.Error
						r.BytesPerS, r.BytesPerSMin, r.BytesPerSMax = 0, 0, 0
					}
					if fio && twin[eng] != "" && r.Error == "" {
						f := mk(bench.ToolFio, twin[eng], eng, cache, bs, q, speed*0.98)
						r.Twin = twin[eng]
						r.VsFio = r.BytesPerS / f.BytesPerS
						results = append(results, r, f)
					} else {
						results = append(results, r)
					}
				}
			}
		}
	}
	rep := &bench.Report{
		SchemaVersion: bench.SchemaVersion,
		Tool:          "iopath",
		Command:       "iopath bench /var/tmp/data --bs " + join(bss) + " --qd " + join(qds) + " --consume none --fio",
		Started:       time.Date(2026, 11, 22, 2, 42, 11, 0, time.UTC),
		Machine: features.Machine{Kernel: "6.18.44", Arch: "amd64", CPUModel: "Intel(R) Xeon(R) Processor",
			Cores: 2, MemBytes: 24 << 30, PageSize: 4096, THP: "madvise", Filesystem: "ext4", Device: "vda",
			IOURing: "available", GoVersion: "go1.26.8", IopathVersion: "devel", LatencyClock: "tsc"},
		File:    bench.FileInfo{Path: "/var/tmp/data", SizeBytes: 1 << 30},
		Sweep:   bench.Sweep{BlockSizes: bss, Workers: []int{1}, QueueDepths: qds, Caches: []string{"warm", "cold"}},
		Results: results,
		Notes:   []string{"mmap (warm): 1 of 3 runs was noisy; they are kept in the figures"},
	}
	if fio {
		rep.Fio = &bench.FioInfo{Path: "/usr/bin/fio", Version: "fio-3.33"}
	}
	return rep
}

func join(v []int) string {
	s := ""
	for i, x := range v {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprint(x)
	}
	return s
}

// smallSweep is the sweep the golden files use: 2 block sizes × 2 queue
// depths, three engines, with fio twins.
func smallSweep() *bench.Report {
	return sweepSample([]int{4096, 131072}, []int{1, 32}, []string{"pread", "mmap", "io_uring", "readv"}, true)
}

// bigSweep is the reporting-overhead target's workload: a 4×4 sweep of 5
// engines with fio twins.
func bigSweep() *bench.Report {
	return sweepSample([]int{4096, 16384, 131072, 1 << 20}, []int{1, 8, 32, 128},
		[]string{"read", "pread", "readv", "mmap", "io_uring"}, true)
}

// roundTrip writes data (a report's JSON) to a file, reads it back with
// load and checks that it is want again.
func roundTrip[T any](t *testing.T, data []byte, load func(string) (T, error), want T) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "report.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := load(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, want) {
		a, _ := json.Marshal(want)
		b, _ := json.Marshal(back)
		t.Errorf("did not round-trip through JSON:\nwant %s\ngot  %s", a, b)
	}
}

// writeSample is a write benchmark's report: the five write engines, warm,
// sync every:8, with their syncs (mmap's second run failed to verify).
func writeSample() *bench.Report {
	r := sweepSample([]int{128 << 10}, []int{32}, []string{"read", "pread", "readv", "mmap", "io_uring"}, false)
	names := map[string]string{"read": "write", "readv": "pwritev", "pread": "pwrite"}
	var rows []bench.Result
	for _, res := range r.Results {
		if res.Cache != "warm" {
			continue
		}
		if n, ok := names[res.Engine]; ok {
			res.Engine = n
		}
		res.Pattern, res.Sync, res.Consume, res.MinTimeNs = "write", "every:8", "", 0
		res.SyncsPerPass, res.SyncLatP50Ns, res.SyncLatP99Ns = 1024, 140000, 900000
		ok := true
		res.ChecksumOK = &ok
		for i := range res.Runs {
			res.Runs[i].Syncs, res.Runs[i].Verified, res.Runs[i].ChecksumOK = 1024, "direct", &ok
		}
		rows = append(rows, res)
	}
	r.Results = rows
	r.Sweep.Caches = []string{"warm"}
	r.Command = "iopath bench --rw write --sync every:8"
	r.Notes = []string{"durability (--sync every:8: ...)"}
	return r
}
