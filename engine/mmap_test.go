package engine_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"

	"github.com/iopath/iopath/engine"
	"github.com/iopath/iopath/internal/sys"
)

// With KeepMapped the mmap engine keeps a worker's mapping from one Run to
// the next while the file is the same (fio's semantics: map once, loop
// over the mapping), and maps again when the path was replaced or the file
// resized: every Run reads the bytes the path holds when it runs. Without
// it every Run maps afresh.
func TestMmapKeepsMapping(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	replace := func(seed byte, n int) []byte {
		data := make([]byte, n)
		for i := range data {
			data[i] = byte(i>>3) ^ seed
		}
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
		return data
	}
	want := replace(1, 1<<20)
	e, err := engine.Lookup("mmap")
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.Prepare(engine.Job{Path: path, BlockSize: 64 << 10, Workers: 2, KeepMapped: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	fresh, err := e.Prepare(engine.Job{Path: path, BlockSize: 64 << 10, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	run := func(what string) int64 {
		t.Helper()
		return runOn(t, p, what, want)
	}
	if a, b := runOn(t, fresh, "without KeepMapped", want), runOn(t, fresh, "without KeepMapped, again", want); a != b {
		t.Errorf("without KeepMapped the second run made %d syscalls, the first %d: want a fresh mapping each", b, a)
	}
	first := run("first run")
	if again := run("second run, same file"); again >= first {
		t.Errorf("second run made %d syscalls, the first %d: the mappings were not kept", again, first)
	}
	want = replace(2, 1<<20)
	if n := run("path replaced"); n != first {
		t.Errorf("after the path was replaced: %d syscalls, want %d (mapped again)", n, first)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	extra := bytes.Repeat([]byte{0xa5}, 12345)
	if _, err := f.Write(extra); err != nil {
		t.Fatal(err)
	}
	f.Close()
	want = append(want, extra...)
	if n := run("file grown"); n != first {
		t.Errorf("after the file grew: %d syscalls, want %d (mapped again)", n, first)
	}
	if err := p.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// runOn runs p, checks that it read want, and returns its syscalls.
func runOn(t *testing.T, p engine.Prepared, what string, want []byte) int64 {
	t.Helper()
	got := make([]byte, len(want))
	st, err := p.Run(context.Background(), engine.SinkFunc(func(_ int, off int64, b []byte) error {
		copy(got[off:], b)
		return nil
	}))
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: the bytes read are not the file's", what)
	}
	return st.Total().Syscalls
}

// touched keeps TestMmapPopulate's loads from being compiled away.
var touched int

// populate maps every cached page of a mapping: touching them all
// afterwards takes (almost) no page fault, where without it the touches
// fault pages in. A cancelled ctx makes no call.
func TestMmapPopulate(t *testing.T) {
	const size = 16 << 20
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
	fd, err := sys.Open(p, sys.O_RDONLY)
	if err != nil {
		t.Fatal(err)
	}
	defer sys.Close(fd)
	minflt := func() int64 {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
		return ru.Minflt
	}
	touch := func(populated bool) int64 {
		m, err := sys.Mmap(fd, 0, size, sys.PROT_READ, sys.MAP_SHARED)
		if err != nil {
			t.Fatal(err)
		}
		defer sys.Munmap(m)
		sys.Madvise(m, sys.MADV_RANDOM)
		if populated {
			if calls := engine.Populate(context.Background(), m); calls != 1 {
				t.Errorf("%d calls for %d MiB, want 1", calls, size>>20)
			}
		}
		before := minflt()
		var sum byte
		for off := 0; off < size; off += 4096 {
			sum += m[off]
		}
		touched += int(sum)
		return minflt() - before
	}
	runtime.LockOSThread() // the counts are the process's: keep the rest of it quiet
	defer runtime.UnlockOSThread()
	cold, warm := touch(false), touch(true)
	pages := int64(size / 4096)
	if warm > pages/64 || cold < 2*max(warm, 1) {
		t.Errorf("page faults touching %d pages: %d without populate, %d with; want few with and many more without", pages, cold, warm)
	}
	t.Logf("page faults touching %d pages: %d without populate, %d with", pages, cold, warm)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if calls := engine.Populate(ctx, make([]byte, 4096)); calls != 0 {
		t.Errorf("a cancelled populate made %d calls", calls)
	}
}
