package advise

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zeebo/xxh3"

	"github.com/iopath/iopath/engine"
	"github.com/iopath/iopath/features"
	"github.com/iopath/iopath/internal/testenv"
)

func smallTree(t *testing.T) string {
	dir := t.TempDir()
	sizes := map[string]int{}
	for i := range 300 {
		sizes[fmt.Sprintf("d%d/f%03d", i%4, i)] = 1 + (i*997)%20000
	}
	writeFiles(t, dir, sizes)
	return dir
}

// checkResult checks what every Result must satisfy.
func checkResult(t *testing.T, res *Result, kind Kind) {
	t.Helper()
	if res.Inventory.Kind != kind || res.SchemaVersion != SchemaVersion {
		t.Fatalf("kind %s schema %d", res.Inventory.Kind, res.SchemaVersion)
	}
	probe := features.Probe()
	measured := map[Cache]int{}
	for _, m := range res.Measurements {
		if m.Engine == "io_uring" && !probe.IOURing.Available {
			if m.Skipped == "" || !strings.Contains(m.Skipped, probe.IOURing.Reason) {
				t.Errorf("%s %s: io_uring is not available here, but Skipped is %q", m.Label, m.Cache, m.Skipped)
			}
			continue
		}
		if strings.HasPrefix(m.Skipped, "failed: ") {
			t.Errorf("%s %s: %s", m.Label, m.Cache, m.Skipped)
		}
		if m.Skipped != "" {
			continue // the budget can leave a whole phase out
		}
		if !m.Measured() || m.Ratio <= 0 {
			t.Errorf("%s %s: not measured (%+v)", m.Label, m.Cache, m)
		}
		if m.Mismatch != 0 || m.Errors != 0 {
			t.Errorf("%s %s: %d checksum mismatches, %d errors", m.Label, m.Cache, m.Mismatch, m.Errors)
		}
		measured[m.Cache]++
	}
	if measured[Warm] < 4 {
		t.Errorf("only %d candidates measured warm", measured[Warm])
	}
	for _, ph := range res.Phases {
		if ph.Cache == Cold && ph.Skipped == "" {
			if ph.Valid != (ph.Residency <= 0.5) {
				t.Errorf("cold phase valid=%v with %.0f%% left cached", ph.Valid, ph.Residency*100)
			}
			if !ph.Valid && !slices.ContainsFunc(res.Notes, func(n string) bool { return strings.Contains(n, "the drop did not take") }) {
				t.Errorf("the cold drop did not take, and no note says so: %q", res.Notes)
			}
		}
	}
	rec := res.Recommendation
	if rec.Engine == "" || rec.Ratio <= 0 || !strings.Contains(rec.Text, "`"+rec.Engine+"`") {
		t.Errorf("recommendation %+v", rec)
	}
	if res.Snippet != Snippet(kind, rec.Candidate) {
		t.Errorf("snippet is not the recommendation's")
	}
	if res.Auto == nil || res.Auto.Engine == "" || res.Auto.Text == "" {
		t.Errorf("no check of Auto's pick: %+v", res.Auto)
	}
	if slices.Contains(res.Candidates, res.Auto.Label) == false {
		t.Errorf("Auto's pick %s is not among the candidates %v", res.Auto.Label, res.Candidates)
	}
	var js bytes.Buffer
	if a := res.Advice(); !strings.Contains(a, rec.Text) || !strings.Contains(a, "In Go") {
		t.Errorf("advice:\n%s", a)
	}
	if err := WriteJSON(&js, res); err != nil {
		t.Fatal(err)
	}
	var back Result
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatalf("JSON does not parse back: %v", err)
	}
	if back.Recommendation.Text != rec.Text || len(back.Measurements) != len(res.Measurements) {
		t.Errorf("JSON round trip lost data")
	}
}

func TestRunTree(t *testing.T) {
	testenv.CheckFDs(t)
	dir := smallTree(t)
	var mu sync.Mutex
	var steps []string
	res, err := Run(context.Background(), []string{dir}, Options{Budget: 4 * time.Second, Procs: 2,
		Progress: func(done, total int, what string) {
			mu.Lock()
			steps = append(steps, what)
			mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, res, ManyFiles)
	// The sample is every file, unless a busy machine could not warm
	// them all within the budget's share: then it is the files warmed,
	// and a note says so (a budget, not a speed, is what is tested).
	if res.Inventory.Files != 300 || res.Sample.Files < 1 || res.Sample.Files > 300 {
		t.Errorf("%d files, sample %d", res.Inventory.Files, res.Sample.Files)
	}
	if cut := slices.ContainsFunc(res.Notes, func(n string) bool { return strings.Contains(n, "the sample was cut from 300") }); cut != (res.Sample.Files < 300) {
		t.Errorf("sample of %d files, notes %q: a cut sample and only a cut one says so", res.Sample.Files, res.Notes)
	}
	want := []string{"readfile", "pool ×128", "raw", "raw ×2", "io_uring", "io_uring ×2"}
	if !slices.Equal(res.Candidates[:len(want)], want) {
		t.Errorf("candidates %v, want %v first", res.Candidates, want)
	}
	if res.Elapsed > 8 {
		t.Errorf("took %.1f s on a 4 s budget", res.Elapsed)
	}
	if len(steps) < 5 || steps[0] != "listing the files" {
		t.Errorf("progress steps %q", steps)
	}
}

func TestRunOneFile(t *testing.T) {
	testenv.CheckFDs(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]int{"big": 8<<20 + 12345})
	res, err := Run(context.Background(), []string{filepath.Join(dir, "big")},
		Options{Budget: 3 * time.Second, Procs: 2, FileLimit: 2 << 20})
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, res, OneFile)
	if res.Sample.Bytes != 2<<20 && !slices.ContainsFunc(res.Notes, func(n string) bool { return strings.Contains(n, "warming") }) {
		t.Errorf("a pass reads %d bytes, want the 2 MiB limit", res.Sample.Bytes)
	}
	want := []string{"read", "pread", "pread ×2", "mmap", "io_uring"}
	if !slices.Equal(res.Candidates[:len(want)], want) {
		t.Errorf("candidates %v, want %v first", res.Candidates, want)
	}
	if !strings.Contains(res.Snippet, "iopath.Scan(") {
		t.Errorf("snippet %q", res.Snippet)
	}
}

func TestRunWithoutIOURing(t *testing.T) {
	t.Setenv(features.DisableEnv, "1")
	dir := smallTree(t)
	// A budget a busy machine (two race-built test binaries on two CPUs)
	// still leaves time to measure in; the test is about io_uring's
	// absence, not the budget.
	res, err := Run(context.Background(), []string{dir}, Options{Budget: 3 * time.Second, Procs: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.IOURing.Available {
		t.Fatal("io_uring available despite " + features.DisableEnv)
	}
	t.Logf("%.2f s on a 3 s budget", res.Elapsed)
	n := 0
	for _, m := range res.Measurements {
		if m.Engine == "io_uring" {
			n++
			if !strings.Contains(m.Skipped, features.DisableEnv) {
				t.Errorf("%s %s: skipped %q, want the probe's reason", m.Label, m.Cache, m.Skipped)
			}
		}
	}
	if n == 0 {
		t.Error("io_uring rows missing: they should be there, saying why they were left out")
	}
	if !slices.ContainsFunc(res.Notes, func(s string) bool { return strings.HasPrefix(s, "io_uring left out: ") }) {
		t.Errorf("notes %q do not say io_uring was left out", res.Notes)
	}
	if res.Recommendation.Engine == "io_uring" || res.Auto.Engine == "io_uring" {
		t.Errorf("io_uring recommended while unavailable: %+v / %+v", res.Recommendation, res.Auto)
	}
}

func TestRunErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Run(context.Background(), []string{filepath.Join(dir, "nope")}, Options{Budget: time.Second}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing path: %v", err)
	}
	if _, err := Run(context.Background(), []string{dir}, Options{Budget: time.Second}); !errors.Is(err, ErrNothingToRead) {
		t.Errorf("empty dir: %v", err)
	}
	if _, err := Run(context.Background(), []string{dir}, Options{Budget: -time.Second}); err == nil {
		t.Error("negative budget accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	writeFiles(t, dir, map[string]int{"a": 10, "b": 10})
	if _, err := Run(ctx, []string{dir}, Options{Budget: time.Second}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// TestRegionStart checks the trial's idea of where each worker of an
// engine starts against where the engines really start.
func TestRegionStart(t *testing.T) {
	dir := t.TempDir()
	size := 5*engine.DefaultBlockSize + 777
	writeFiles(t, dir, map[string]int{"f": size})
	inv := &Inventory{Paths: []string{filepath.Join(dir, "f")}, Kind: OneFile, Bytes: int64(size)}
	ft := newFileTrial(inv, 3, 0, features.Probe())
	for _, name := range []string{"pread", "read"} {
		e, _ := engine.Lookup(name)
		pr, err := e.Prepare(engine.Job{Path: inv.Paths[0], Workers: 3})
		if err != nil {
			t.Fatal(err)
		}
		first := []int64{-1, -1, -1}
		var mu sync.Mutex
		_, err = pr.Run(context.Background(), engine.SinkFunc(func(w int, off int64, b []byte) error {
			mu.Lock()
			if first[w] < 0 || off < first[w] {
				first[w] = off
			}
			mu.Unlock()
			return nil
		}))
		pr.Close()
		if err != nil {
			t.Fatal(err)
		}
		for k := range 3 {
			if got := ft.regionStart(k, 3); got != first[k] {
				t.Errorf("%s worker %d starts at %d, the trial thinks %d", name, k, first[k], got)
			}
		}
	}
}

// TestFilePassReadsItsWindows checks that a pass over a file larger than
// the limit reads exactly each worker's window, and hashes what a plain
// read of those ranges gives.
func TestFilePassReadsItsWindows(t *testing.T) {
	testenv.CheckFDs(t)
	dir := t.TempDir()
	size := 4<<20 + 4321
	writeFiles(t, dir, map[string]int{"f": size})
	path := filepath.Join(dir, "f")
	data, _ := os.ReadFile(path)
	inv := &Inventory{Paths: []string{path}, Kind: OneFile, Bytes: int64(size)}
	ft := newFileTrial(inv, 2, 1<<20, features.Probe())
	for _, c := range ft.candidates() {
		t.Run(c.Label(), func(t *testing.T) {
			p, err := ft.open(c)
			if isNotSupported(err) {
				t.Skipf("%s cannot run here: %v", c.Label(), err)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer p.close()
			pr, err := p.pass(context.Background(), time.Now().Add(time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			var want uint64
			var n int64
			for _, s := range ft.windows(c.Workers) {
				for off := s.off; off < s.off+s.n; off += ft.bs {
					end := min(off+ft.bs, s.off+s.n)
					want += xxh3.HashSeed(data[off:end], uint64(off))
					n += end - off
				}
			}
			if pr.bytes != n || n != 1<<20 {
				t.Errorf("read %d bytes, want the windows' %d (limit 1 MiB)", pr.bytes, n)
			}
			if pr.sum != want {
				t.Errorf("the bytes read are not the windows' bytes")
			}
			if pr.whole {
				t.Errorf("a pass over part of the file is marked whole")
			}
		})
	}
}

// TestManyPassDelivers checks each batch candidate's pass against
// os.ReadFile, file by file (through the order-independent sum).
func TestManyPassDelivers(t *testing.T) {
	testenv.CheckFDs(t)
	dir := smallTree(t)
	inv, err := Inspect(context.Background(), []string{dir}, time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var want uint64
	for _, s := range inv.sample {
		b, err := os.ReadFile(s.path)
		if err != nil {
			t.Fatal(err)
		}
		want += xxh3.Hash(b)
	}
	mt := newManyTrial(inv, 2, features.Probe())
	for _, c := range mt.candidates() {
		t.Run(c.Label(), func(t *testing.T) {
			p, err := mt.open(c)
			if isNotSupported(err) {
				t.Skipf("%s cannot run here: %v", c.Label(), err)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer p.close()
			pr, err := p.pass(context.Background(), time.Now().Add(time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			if !pr.whole || pr.files != 300 || pr.errors != 0 || pr.sum != want || pr.bytes != inv.Bytes {
				t.Errorf("whole %v, %d files, %d errors, %d bytes (want 300 files, %d bytes), sum ok %v",
					pr.whole, pr.files, pr.errors, pr.bytes, inv.Bytes, pr.sum == want)
			}
			// A pass past its deadline stops early and is not whole.
			pr, err = p.pass(context.Background(), time.Now().Add(-time.Second))
			if err != nil || pr.whole || pr.files == 0 || pr.files == 300 {
				t.Errorf("a pass past its deadline: %v, whole %v, %d files", err, pr.whole, pr.files)
			}
		})
	}
}

func TestMergeSpans(t *testing.T) {
	got := mergeSpans([]span{{100, 50}, {0, 10}, {5, 20}, {150, 1}, {300, 5}})
	want := []span{{0, 25}, {100, 51}, {300, 5}}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestMincoreSees(t *testing.T) {
	for _, tt := range []struct {
		name           string
		uid, gid, mode uint32
		euid, egid     int
		groups         []int
		want           bool
	}{
		{"root", 1000, 1000, 0o444, 0, 0, nil, true},
		{"owner of a read-only file", 1000, 1000, 0o444, 1000, 1000, nil, true},
		{"other, read-only", 0, 0, 0o644, 65534, 65534, nil, false},
		{"other, world-writable", 0, 0, 0o666, 65534, 65534, nil, true},
		{"group-writable, in the group", 0, 50, 0o664, 65534, 50, nil, true},
		{"group-writable, a supplementary group", 0, 50, 0o664, 65534, 65534, []int{4, 50}, true},
		{"group-writable, not in the group", 0, 50, 0o664, 65534, 65534, []int{4}, false},
	} {
		if got := mincoreSeesAs(tt.uid, tt.gid, tt.mode, tt.euid, tt.egid, tt.groups); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestManyWarmNoneReadable: a sample none of whose files can be read
// (removed after the listing here; unreadable to the user elsewhere) is
// an error naming one of them, not a recommendation measured on failed
// opens; a sample with one file readable goes on.
func TestManyWarmNoneReadable(t *testing.T) {
	dir := smallTree(t)
	inv, err := Inspect(context.Background(), []string{dir}, time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range inv.sample[1:] {
		if err := os.Remove(s.path); err != nil {
			t.Fatal(err)
		}
	}
	mt := newManyTrial(inv, 2, features.Probe())
	if _, err := mt.warm(context.Background(), time.Now().Add(time.Minute)); err != nil {
		t.Fatalf("one file readable: %v", err)
	}
	if err := os.Remove(inv.sample[0].path); err != nil {
		t.Fatal(err)
	}
	_, err = mt.warm(context.Background(), time.Now().Add(time.Minute))
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "none of the 300 files could be read") || !strings.Contains(err.Error(), dir) {
		t.Errorf("no file readable: %v", err)
	}
}
