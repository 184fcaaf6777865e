package fio

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// argMap turns ["--bs=4096", "--time_based"] into {"bs": "4096",
// "time_based": ""}, failing on a repeated option.
func argMap(t *testing.T, args []string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, a := range args {
		if !strings.HasPrefix(a, "--") {
			t.Fatalf("argument %q is not an option", a)
		}
		k, v, _ := strings.Cut(a[2:], "=")
		if _, dup := m[k]; dup {
			t.Fatalf("option %s given twice in %q", k, args)
		}
		m[k] = v
	}
	return m
}

func TestArgs(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name string
		job  Job
		want map[string]string // options and their values ("" for a flag)
		not  []string          // options that must be absent
	}{
		{
			name: "pread seq warm one pass",
			job:  Job{Path: "/f", FileSize: 8 * mib, Engine: "pread", BlockSize: 128 << 10, Workers: 1},
			want: map[string]string{"name": "psync", "ioengine": "psync", "rw": "read", "bs": "131072",
				"size": "8388608", "numjobs": "1", "iodepth": "1", "invalidate": "0", "fadvise_hint": "0"},
			not: []string{"time_based", "runtime", "offset_increment", "direct", "randseed", "fixedbufs", "sqthread_poll"},
		},
		{
			name: "read rand warm time-based",
			job: Job{Path: "/f", FileSize: 8*mib + 1000, Engine: "read", Random: true, BlockSize: 4096,
				Workers: 1, MinTime: 1500 * time.Millisecond, Seed: 0x10fa7},
			want: map[string]string{"ioengine": "sync", "rw": "randread", "size": "8388608",
				"randseed": "69543", "time_based": "", "runtime": "1500ms", "invalidate": "0"},
			not: []string{"offset_increment", "direct"},
		},
		{
			name: "readv cold 4 workers",
			job: Job{Path: "/f", FileSize: 10*mib + 12345, Engine: "readv", BlockSize: 64 << 10, Workers: 4,
				Invalidate: true},
			// 10 MiB + 12345 is 160 blocks and a bit: 40 per worker.
			want: map[string]string{"ioengine": "pvsync", "numjobs": "4", "size": "2621440",
				"offset_increment": "2621440", "group_reporting": "", "invalidate": "1"},
			not: []string{"time_based", "runtime", "direct"},
		},
		{
			name: "readv seq 4 vectors is vsync, coalescing 4 blocks per readv",
			job:  Job{Path: "/f", FileSize: 8 * mib, Engine: "readv", BlockSize: 128 << 10, Workers: 1, Vectors: 4},
			want: map[string]string{"ioengine": "vsync", "iodepth": "4", "iodepth_batch_submit": "4", "rw": "read"},
		},
		{
			name: "readv rand stays pvsync: one block per call, as ours",
			job:  Job{Path: "/f", FileSize: 8 * mib, Engine: "readv", Random: true, BlockSize: 4096, Workers: 1, Vectors: 4},
			want: map[string]string{"ioengine": "pvsync", "iodepth": "1"},
			not:  []string{"iodepth_batch_submit"},
		},
		{
			name: "TSC clock",
			job:  Job{Path: "/f", FileSize: 8 * mib, Engine: "pread", BlockSize: 4096, Workers: 1, TSCClock: true},
			want: map[string]string{"clocksource": "cpu"},
		},
		{
			name: "mmap rand warm 3 workers",
			job: Job{Path: "/f", FileSize: 8 * mib, Engine: "mmap", Random: true, BlockSize: 4096, Workers: 3,
				MinTime: time.Second},
			// 2048 blocks: 682 per worker, 2 left over.
			want: map[string]string{"ioengine": "mmap", "size": "2793472", "offset_increment": "2793472",
				"numjobs": "3", "runtime": "1000ms", "iodepth": "1"},
			not: []string{"fadvise_hint", "direct"},
		},
		{
			name: "io_uring direct qd32 2 workers",
			job: Job{Path: "/f", FileSize: 64 * mib, Engine: "io_uring", BlockSize: 1 << 20, Workers: 2,
				QueueDepth: 32, Direct: true, MinTime: 1234567 * time.Nanosecond},
			want: map[string]string{"ioengine": "io_uring", "iodepth": "32", "fixedbufs": "1",
				"registerfiles": "1", "direct": "1", "invalidate": "0", "runtime": "2ms", "size": "33554432",
				"offset_increment": "33554432", "fadvise_hint": "0"},
			not: []string{"sqthread_poll"},
		},
		{
			name: "io_uring sqpoll cold",
			job: Job{Path: "/f", FileSize: 8 * mib, Engine: "io_uring", Random: true, BlockSize: 4096, Workers: 1,
				QueueDepth: 8, SQPoll: true, Invalidate: true},
			want: map[string]string{"iodepth": "8", "fixedbufs": "1", "registerfiles": "1",
				"sqthread_poll": "1", "invalidate": "1"},
			not: []string{"time_based", "direct"},
		},
		{
			name: "pwrite seq write, no sync",
			job:  Job{Path: "/f", FileSize: 8 * mib, Engine: "pwrite", Write: true, BlockSize: 128 << 10, Workers: 1},
			want: map[string]string{"name": "psync", "ioengine": "psync", "rw": "write", "size": "8388608",
				"iodepth": "1", "fadvise_hint": "0"},
			not: []string{"end_fsync", "fdatasync", "fsync", "sync"},
		},
		{
			name: "write rand end: one pass whatever MinTime",
			job: Job{Path: "/f", FileSize: 8 * mib, Engine: "write", Write: true, Random: true, BlockSize: 4096,
				Workers: 2, Sync: SyncEnd, MinTime: time.Second, Seed: 3},
			want: map[string]string{"ioengine": "sync", "rw": "randwrite", "end_fsync": "1", "randseed": "3",
				"numjobs": "2", "offset_increment": "4194304"},
			not: []string{"time_based", "runtime", "fdatasync"},
		},
		{
			name: "pwritev seq 4 vectors every:8 is vsync",
			job: Job{Path: "/f", FileSize: 8 * mib, Engine: "pwritev", Write: true, BlockSize: 64 << 10, Workers: 1,
				Vectors: 4, Sync: SyncEvery, SyncEvery: 8, MinTime: time.Second},
			want: map[string]string{"ioengine": "vsync", "iodepth": "4", "iodepth_batch_submit": "4",
				"rw": "write", "fdatasync": "8", "time_based": "", "runtime": "1000ms"},
			not: []string{"end_fsync"},
		},
		{
			name: "pwritev seq 4 vectors every:6 syncs every 2 calls, as ours",
			job: Job{Path: "/f", FileSize: 8 * mib, Engine: "pwritev", Write: true, BlockSize: 64 << 10, Workers: 1,
				Vectors: 4, Sync: SyncEvery, SyncEvery: 6},
			want: map[string]string{"ioengine": "vsync", "fdatasync": "8"},
		},
		{
			name: "pwritev seq 4 vectors every:2 syncs every call, as ours",
			job: Job{Path: "/f", FileSize: 8 * mib, Engine: "pwritev", Write: true, BlockSize: 64 << 10, Workers: 1,
				Vectors: 4, Sync: SyncEvery, SyncEvery: 2},
			want: map[string]string{"ioengine": "vsync", "fdatasync": "4"},
		},
		{
			name: "pwritev rand every:3 is pvsync, one block per call",
			job: Job{Path: "/f", FileSize: 8 * mib, Engine: "pwritev", Write: true, Random: true, BlockSize: 4096,
				Workers: 1, Vectors: 4, Sync: SyncEvery, SyncEvery: 3},
			want: map[string]string{"ioengine": "pvsync", "fdatasync": "3"},
		},
		{
			name: "pwritev rand dsync stays pvsync",
			job: Job{Path: "/f", FileSize: 8 * mib, Engine: "pwritev", Write: true, Random: true, BlockSize: 4096,
				Workers: 1, Vectors: 4, Sync: SyncDSync},
			want: map[string]string{"ioengine": "pvsync", "iodepth": "1", "rw": "randwrite", "sync": "dsync"},
			not:  []string{"fdatasync", "iodepth_batch_submit"},
		},
		{
			name: "mmap dsync msyncs every block",
			job: Job{Path: "/f", FileSize: 8 * mib, Engine: "mmap", Write: true, BlockSize: 4096, Workers: 1,
				Sync: SyncDSync},
			want: map[string]string{"ioengine": "mmap", "rw": "write", "fdatasync": "1"},
			not:  []string{"sync", "fadvise_hint", "direct"},
		},
		{
			name: "mmap end",
			job: Job{Path: "/f", FileSize: 8 * mib, Engine: "mmap", Write: true, BlockSize: 1000, Workers: 1,
				Sync: SyncEnd},
			want: map[string]string{"ioengine": "mmap", "end_fsync": "1", "size": "8388000"},
		},
		{
			name: "io_uring direct write qd32 registers buffers",
			job: Job{Path: "/f", FileSize: 64 * mib, Engine: "io_uring", Write: true, BlockSize: 128 << 10,
				Workers: 1, QueueDepth: 32, Direct: true},
			want: map[string]string{"ioengine": "io_uring", "rw": "write", "iodepth": "32", "fixedbufs": "1",
				"registerfiles": "1", "direct": "1"},
		},
		{
			name: "io_uring every:4 syncs through the ring: no fixed buffers",
			job: Job{Path: "/f", FileSize: 8 * mib, Engine: "io_uring", Write: true, BlockSize: 4096, Workers: 1,
				QueueDepth: 8, Sync: SyncEvery, SyncEvery: 4},
			want: map[string]string{"iodepth": "8", "registerfiles": "1", "fdatasync": "4"},
			not:  []string{"fixedbufs"},
		},
		{
			name: "io_uring end sqpoll: no fixed buffers",
			job: Job{Path: "/f", FileSize: 8 * mib, Engine: "io_uring", Write: true, BlockSize: 4096, Workers: 1,
				QueueDepth: 8, SQPoll: true, Sync: SyncEnd},
			want: map[string]string{"registerfiles": "1", "sqthread_poll": "1", "end_fsync": "1"},
			not:  []string{"fixedbufs"},
		},
		{
			name: "io_uring dsync keeps fixed buffers",
			job: Job{Path: "/f", FileSize: 8 * mib, Engine: "io_uring", Write: true, BlockSize: 4096, Workers: 1,
				QueueDepth: 8, Sync: SyncDSync},
			want: map[string]string{"fixedbufs": "1", "registerfiles": "1", "sync": "dsync"},
		},
		{
			name: "sqpoll ignored without io_uring, queue depth too",
			job: Job{Path: "/f", FileSize: 8 * mib, Engine: "pread", BlockSize: 4096, Workers: 1,
				QueueDepth: 64, SQPoll: true},
			want: map[string]string{"iodepth": "1"},
			not:  []string{"sqthread_poll", "fixedbufs", "registerfiles"},
		},
	}
	always := map[string]string{"filename": "/f", "allow_file_create": "0",
		"lat_percentiles": "1", "percentile_list": "50:90:99:99.9:99.99", "output-format": "json",
		"group_reporting": ""}
	// A read job is read-only; a write job opens the file as it is and
	// never lays it out, appends, preallocates, fills or unlinks it.
	reads := map[string]string{"readonly": ""}
	writes := map[string]string{"create_on_open": "1"}
	never := []string{"thread", "overwrite", "unlink", "unlink_each_loop", "file_append", "fallocate",
		"fill_device", "create_only", "fsync", "allow_mounted_write"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args, err := tt.job.Args()
			if err != nil {
				t.Fatal(err)
			}
			m := argMap(t, args)
			mode, other := reads, writes
			if tt.job.Write {
				mode, other = writes, reads
			}
			for _, want := range []map[string]string{always, mode, tt.want} {
				for k, v := range want {
					if got, ok := m[k]; !ok || got != v {
						t.Errorf("--%s=%q, want %q (args %q)", k, got, v, args)
					}
				}
			}
			for k := range other {
				tt.not = append(tt.not, k)
			}
			for _, k := range append(tt.not, never...) {
				if _, ok := m[k]; ok {
					t.Errorf("--%s given (args %q)", k, args)
				}
			}
			// Every job reads whole blocks of its own share.
			j := tt.job
			bs := int64(j.BlockSize)
			size, _ := strconv.ParseInt(m["size"], 10, 64)
			if size <= 0 || size%bs != 0 || size != j.Share() {
				t.Errorf("size %d: want Share %d, a positive multiple of bs %d", size, j.Share(), bs)
			}
			if inc, ok := m["offset_increment"]; ok && inc != m["size"] {
				t.Errorf("offset_increment %s != size %s", inc, m["size"])
			}
			if pass := j.PassBytes(); pass != size*int64(j.Workers) || pass > j.FileSize ||
				j.FileSize-pass >= bs*int64(j.Workers) {
				t.Errorf("PassBytes %d for a %d-byte file, %d workers of %d bytes", pass, j.FileSize, j.Workers, bs)
			}
			if _, ok := m["time_based"]; ok != (j.MinTime > 0 && j.Sync != SyncEnd) {
				t.Errorf("time_based given: %v, MinTime %v, sync %v", ok, j.MinTime, j.Sync)
			}
			if got := j.IOEngine(); got != m["ioengine"] {
				t.Errorf("IOEngine %q, --ioengine=%s", got, m["ioengine"])
			}
		})
	}
}

func TestArgsErrors(t *testing.T) {
	ok := Job{Path: "/f", FileSize: 1 << 20, Engine: "pread", BlockSize: 4096, Workers: 1, QueueDepth: 8}
	if _, err := ok.Args(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		edit func(*Job)
		want string
	}{
		{"null has no twin", func(j *Job) { j.Engine = "null" }, "no fio twin"},
		{"unknown engine", func(j *Job) { j.Engine = "aio" }, "no fio twin"},
		{"no path", func(j *Job) { j.Path = "" }, "no file"},
		{"zero block size", func(j *Job) { j.BlockSize = 0 }, "block size"},
		{"negative block size", func(j *Job) { j.BlockSize = -4096 }, "block size"},
		{"no workers", func(j *Job) { j.Workers = 0 }, "workers"},
		{"io_uring without queue depth", func(j *Job) { j.Engine, j.QueueDepth = "io_uring", 0 }, "queue depth"},
		{"mmap direct", func(j *Job) { j.Engine, j.Direct = "mmap", true }, "O_DIRECT"},
		{"mmap direct write", func(j *Job) { j.Engine, j.Direct, j.Write = "mmap", true, true }, "O_DIRECT"},
		{"append", func(j *Job) { j.Engine, j.Write, j.Append = "pwrite", true, true }, "fio cannot append"},
		{"append named on a read job", func(j *Job) { j.Append = true }, "fio cannot append"},
		{"read engine writing", func(j *Job) { j.Write = true }, `write engine "pread" has no fio twin`},
		{"readv writing", func(j *Job) { j.Engine, j.Write = "readv", true }, "no fio twin"},
		{"write engine reading", func(j *Job) { j.Engine = "pwrite" }, "no fio twin"},
		{"sync on a read job", func(j *Job) { j.Sync = SyncEnd }, "write jobs only"},
		{"N on a read job", func(j *Job) { j.SyncEvery = 4 }, "write jobs only"},
		{"every 0", func(j *Job) { j.Engine, j.Write, j.Sync = "pwrite", true, SyncEvery }, "at least 1"},
		{"every -1", func(j *Job) { j.Engine, j.Write, j.Sync, j.SyncEvery = "pwrite", true, SyncEvery, -1 }, "at least 1"},
		{"N with end", func(j *Job) { j.Engine, j.Write, j.Sync, j.SyncEvery = "pwrite", true, SyncEnd, 4 }, "takes no N"},
		{"unknown sync", func(j *Job) { j.Engine, j.Write, j.Sync = "pwrite", true, SyncDSync+1 }, "unknown sync mode"},
		{"mmap every with a part page", func(j *Job) {
			j.Engine, j.Write, j.Sync, j.SyncEvery, j.BlockSize = "mmap", true, SyncEvery, 2, 6000
		}, "whole pages"},
		{"mmap dsync with a part page", func(j *Job) {
			j.Engine, j.Write, j.Sync, j.BlockSize = "mmap", true, SyncDSync, 512
		}, "whole pages"},
		{"negative min time", func(j *Job) { j.MinTime = -time.Second }, "negative"},
		{"file smaller than a block", func(j *Job) { j.FileSize = 4095 }, "smaller than one"},
		{"file smaller than a block per worker", func(j *Job) { j.Workers = 257 }, "smaller than one"},
		{"empty file", func(j *Job) { j.FileSize = 0 }, "smaller than one"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := ok
			tt.edit(&j)
			args, err := j.Args()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Args() = %q, %v; want an error containing %q", args, err, tt.want)
			}
		})
	}
}

func TestTwin(t *testing.T) {
	for engine, want := range map[string]string{"read": "sync", "pread": "psync", "readv": "pvsync",
		"mmap": "mmap", "io_uring": "io_uring"} {
		if got, ok := Twin(engine); !ok || got != want {
			t.Errorf("Twin(%q) = %q, %v; want %q", engine, got, ok, want)
		}
	}
	for _, engine := range []string{"null", "", "psync"} {
		if got, ok := Twin(engine); ok {
			t.Errorf("Twin(%q) = %q, want none", engine, got)
		}
	}
}

func TestTwinWrite(t *testing.T) {
	for engine, want := range map[string]string{"write": "sync", "pwrite": "psync", "pwritev": "pvsync",
		"mmap": "mmap", "io_uring": "io_uring"} {
		if got, ok := TwinWrite(engine); !ok || got != want {
			t.Errorf("TwinWrite(%q) = %q, %v; want %q", engine, got, ok, want)
		}
	}
	for _, engine := range []string{"null", "", "read", "pread", "readv", "psync"} {
		if got, ok := TwinWrite(engine); ok {
			t.Errorf("TwinWrite(%q) = %q, want none", engine, got)
		}
	}
}

func TestInfoCheck(t *testing.T) {
	mmap2 := Job{Path: "/f", FileSize: 1 << 20, Engine: "mmap", BlockSize: 4096, Workers: 2}
	dsync := Job{Path: "/f", FileSize: 1 << 20, Engine: "pwrite", Write: true, BlockSize: 4096, Workers: 1,
		Sync: SyncDSync}
	edit := func(j Job, f func(*Job)) Job { f(&j); return j }
	tests := []struct {
		version string
		job     Job
		want    string // "" for no error
	}{
		{"fio-3.33", mmap2, "fio-3.42"},
		{"fio-3.33", edit(mmap2, func(j *Job) { j.Write = true }), "fio-3.42"},
		{"fio-3.41", mmap2, "fio-3.42"},
		{"fio-3.42", mmap2, ""},
		{"fio-4.0", mmap2, ""},
		{"fio-3.33", edit(mmap2, func(j *Job) { j.Workers = 1 }), ""},
		{"fio-3.33", edit(mmap2, func(j *Job) { j.Engine = "pread" }), ""},
		{"", mmap2, ""}, // version unknown
		{"fio-3.23", dsync, "--sync=dsync"},
		{"fio-3.24", dsync, ""},
		{"fio-3.23", edit(dsync, func(j *Job) { j.Engine = "mmap" }), ""}, // --fdatasync=1
	}
	for _, tt := range tests {
		err := Info{Path: "fio", Version: tt.version}.Check(tt.job)
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s: Check(%s, %d workers, write %v, sync %v) = %v; want %q", tt.version, tt.job.Engine,
				tt.job.Workers, tt.job.Write, tt.job.Sync, err, tt.want)
		}
	}
}

func TestProbe(t *testing.T) {
	fake := func(version string) string {
		path := filepath.Join(t.TempDir(), "fio")
		if err := os.WriteFile(path, []byte("#!/bin/sh\necho '"+version+"'\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return path
	}
	for _, v := range []string{"fio-3.18", "fio-3.33", "fio-3.35-139-gc5d8", "fio-4.0"} {
		if info, err := Probe(fake(v)); err != nil || info.Version != v {
			t.Errorf("Probe(%s) = %+v, %v", v, info, err)
		}
	}
	for v, want := range map[string]string{"fio-3.17": "fio-3.17", "fio-2.2.10": "fio-2.2.10", "hello": "not a fio version"} {
		if _, err := Probe(fake(v)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Probe(%s): %v; want an error containing %q", v, err, want)
		}
	}
	if _, err := Probe(filepath.Join(t.TempDir(), "nofio")); err == nil {
		t.Error("Probe of a missing binary succeeded")
	}
	t.Setenv("PATH", t.TempDir())
	if _, err := Find(); err == nil || !strings.Contains(err.Error(), "apt-get install fio") {
		t.Errorf("Find with fio not on PATH: %v; want install advice", err)
	}
}
