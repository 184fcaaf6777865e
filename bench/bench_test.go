package bench

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/iopath/iopath/engine"
	"github.com/iopath/iopath/enginetest"
	"github.com/iopath/iopath/internal/testenv"
)

func TestMain(m *testing.M) {
	testenv.NoMachineProfile()
	testenv.NoRaceExitSleep()
	if IsChild() {
		// The runner starts this test binary as its child process.
		if err := ChildMain(context.Background(), os.Stdin, os.Stdout); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// corruptEngine wraps pread and flips one byte of the first block, so that
// the runner's checksum must catch it.
type corruptEngine struct{ engine.Engine }

func (corruptEngine) Name() string { return "test-corrupt" }
func (c corruptEngine) Prepare(j engine.Job) (engine.Prepared, error) {
	p, err := c.Engine.Prepare(j)
	if err != nil {
		return nil, err
	}
	return corruptRun{p}, nil
}

type corruptRun struct{ engine.Prepared }

func (c corruptRun) Run(ctx context.Context, s engine.Sink) (*engine.Stats, error) {
	return c.Prepared.Run(ctx, engine.SinkFunc(func(w int, off int64, b []byte) error {
		if off == 0 && len(b) > 0 {
			b[0] ^= 0xff
			defer func() { b[0] ^= 0xff }()
		}
		return s.Block(w, off, b)
	}))
}

// failEngine fails every run, as an engine that breaks mid-run would.
type failEngine struct{ engine.Engine }

func (failEngine) Name() string { return "test-fail" }
func (f failEngine) Prepare(j engine.Job) (engine.Prepared, error) {
	p, err := f.Engine.Prepare(j)
	if err != nil {
		return nil, err
	}
	return failRun{p}, nil
}

type failRun struct{ engine.Prepared }

func (failRun) Run(ctx context.Context, s engine.Sink) (*engine.Stats, error) {
	return nil, errors.New("injected failure")
}

func init() {
	pread, err := engine.Lookup("pread")
	if err != nil {
		panic(err)
	}
	engine.Register(corruptEngine{pread})
	engine.Register(failEngine{pread})
	engine.Register(enginetest.FailAfter(pread, "test-midway", 256<<10, errors.New("injected failure midway")))
}

func testFile(t testing.TB, size int) string {
	t.Helper()
	b := make([]byte, size)
	rand.Read(b)
	p := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestMeasure(t *testing.T) {
	path := testFile(t, 3<<20+17)
	rep, err := Measure(context.Background(), Config{
		Path:    path,
		Engines: []string{"pread", "null", "test-fail"},
		Caches:  []Cache{Warm, Cold},
		Runs:    2,
	})
	// The failing engine makes the whole measurement fail, after every
	// other engine has been measured and reported.
	if !errors.Is(err, ErrFailed) || !strings.Contains(err.Error(), "test-fail") || rep == nil {
		t.Fatalf("err = %v, want ErrFailed naming test-fail, with the report", err)
	}
	if len(rep.Results) != 6 {
		t.Fatalf("got %d results, want 6", len(rep.Results))
	}
	for _, r := range rep.Results {
		switch r.Engine {
		case "pread":
			if r.Error != "" || r.ChecksumOK == nil || !*r.ChecksumOK {
				t.Errorf("%s %s: error %q checksum %v", r.Engine, r.Cache, r.Error, r.ChecksumOK)
			}
			if len(r.Runs) != 2 || r.BytesPerS <= 0 || r.Syscalls < 25 || r.LatP50Ns <= 0 {
				t.Errorf("%s %s: implausible figures %+v", r.Engine, r.Cache, r)
			}
			for _, run := range r.Runs {
				if run.Bytes != 3<<20+17 {
					t.Errorf("run read %d bytes", run.Bytes)
				}
				if r.Cache == "warm" && run.ResidentBefore < 1 {
					t.Errorf("warm run started with residency %.2f", run.ResidentBefore)
				}
				if r.Cache == "cold" && run.ResidentBefore > 0.5 {
					t.Errorf("cold run started with residency %.2f", run.ResidentBefore)
				}
			}
		case "null":
			if r.ChecksumOK != nil {
				t.Errorf("null engine's checksum should not be judged")
			}
		case "test-fail":
			if !strings.Contains(r.Error, "injected failure") {
				t.Errorf("failing engine's row has error %q", r.Error)
			}
		}
	}
	// A failed row still gives valid JSON with the error set.
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if rep.SchemaVersion != SchemaVersion || rep.Kind() != KindFile || back["results"] == nil {
		t.Errorf("schema_version %d, kind %s, results %v", rep.SchemaVersion, rep.Kind(), back["results"])
	}
}

func TestMeasureCatchesWrongBytes(t *testing.T) {
	path := testFile(t, 1<<20)
	rep, err := Measure(context.Background(), Config{
		Path: path, Engines: []string{"pread", "test-corrupt"}, Caches: []Cache{Warm}, Runs: 1,
	})
	if !errors.Is(err, ErrChecksum) {
		t.Fatalf("err = %v, want ErrChecksum", err)
	}
	if r := rep.Results[1]; r.ChecksumOK == nil || *r.ChecksumOK || !strings.Contains(r.Error, "checksum mismatch") {
		t.Errorf("corrupting engine's row: %+v", r)
	}
	if r := rep.Results[1]; r.LatP99Ns != 0 || r.BytesPerS != 0 {
		t.Errorf("a failed run's figures count in the row: p99 %d, bytes/s %v", r.LatP99Ns, r.BytesPerS)
	}
	if r := rep.Results[0]; r.ChecksumOK == nil || !*r.ChecksumOK {
		t.Errorf("pread row: %+v", r)
	}
}

func TestMeasureBadInput(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, nil, 0o644)
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"missing", Config{Path: filepath.Join(dir, "nope")}, "no such file"},
		{"directory", Config{Path: dir}, "is a directory"},
		{"empty", Config{Path: empty}, "empty"},
		{"fifo-like", Config{Path: "/dev/null"}, "not a regular file"},
		{"engine", Config{Path: empty, Engines: []string{"nope"}}, "unknown engine"},
		{"runs", Config{Path: empty, Runs: -1}, "runs"},
		{"bs", Config{Path: empty, BlockSizes: []int{3}}, "block size"},
		{"bs twice", Config{Path: empty, BlockSizes: []int{4096, 4096}}, "named twice"},
		{"workers", Config{Path: empty, Workers: []int{1, 0}}, "workers"},
		{"cache", Config{Path: empty, Caches: []Cache{"tepid"}}, "cache"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Measure(context.Background(), tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

func TestMeasureCancelled(t *testing.T) {
	path := testFile(t, 1<<20)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rep, err := Measure(ctx, Config{Path: path, Engines: []string{"pread"}, Caches: []Cache{Warm}, Runs: 1})
	if !errors.Is(err, context.Canceled) || rep == nil {
		t.Fatalf("rep %v err %v", rep, err)
	}
}

func TestPermutedChecksumIsPatternFree(t *testing.T) {
	path := testFile(t, 1<<20+5)
	rep, err := Measure(context.Background(), Config{
		Path: path, Engines: []string{"pread"}, Caches: []Cache{Warm}, Runs: 1,
		Pattern: engine.Random, BlockSizes: []int{4096}, Workers: []int{3},
	})
	if err != nil {
		t.Fatal(err)
	}
	if r := rep.Results[0]; r.ChecksumOK == nil || !*r.ChecksumOK || r.Runs[0].Blocks != 257 {
		t.Fatalf("random pattern: %+v", r)
	}
}

func TestMeasureIOURingUnavailable(t *testing.T) {
	t.Setenv("IOPATH_DISABLE_IO_URING", "1") // children inherit it
	path := testFile(t, 1<<20)
	rep, err := Measure(context.Background(), Config{
		Path: path, Engines: []string{"pread", "io_uring"}, Caches: []Cache{Warm}, Runs: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Results[1]
	if !strings.Contains(r.Error, "IOPATH_DISABLE_IO_URING") || len(r.Runs) != 0 {
		t.Errorf("io_uring row should say why it did not run, once: %+v", r)
	}
	if rep.Results[0].Error != "" {
		t.Errorf("pread row failed: %s", rep.Results[0].Error)
	}
	if !strings.Contains(rep.Machine.IOURing, "IOPATH_DISABLE_IO_URING") {
		t.Errorf("machine block says io_uring %q", rep.Machine.IOURing)
	}
}

func TestMeasureDirectNotApplicable(t *testing.T) {
	path := testFile(t, 1<<20)
	rep, err := Measure(context.Background(), Config{
		Path: path, Engines: []string{"mmap", "pread"}, Caches: []Cache{Direct}, Runs: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	if m := rep.Results[0]; !strings.Contains(m.Error, "not applicable") || len(m.Runs) != 0 {
		t.Errorf("mmap direct: %+v", m)
	}
	p := rep.Results[1]
	if rep.Machine.Filesystem == "tmpfs" {
		if !strings.Contains(p.Error, "O_DIRECT") {
			t.Errorf("pread direct on tmpfs: %+v", p)
		}
		return
	}
	if p.Error != "" || p.ChecksumOK == nil || !*p.ChecksumOK {
		t.Errorf("pread direct: %+v", p)
	}
}

func TestMeasureNotesWrongCacheState(t *testing.T) {
	path := testFile(t, 1<<20)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Pages mapped and locked by this process cannot be dropped: the cold
	// runs start warm, and must say so.
	m, err := syscall.Mmap(int(f.Fd()), 0, 1<<20, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(m)
	if err := syscall.Mlock(m); err != nil {
		t.Skipf("cannot lock pages here (needs CAP_IPC_LOCK or a memlock limit): %v", err)
	}
	rep, err := Measure(context.Background(), Config{Path: path, Engines: []string{"pread"}, Caches: []Cache{Cold}, Runs: 2})
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Results[0]
	if len(r.Notes) != 2 || !strings.Contains(r.Notes[0], "cold run 1 started with 100% of the file cached") {
		t.Errorf("notes %q, want one per run saying the cold run started warm", r.Notes)
	}
	if r.Error != "" || len(r.Runs) != 2 {
		t.Errorf("the runs must still be shown: %+v", r)
	}
}
