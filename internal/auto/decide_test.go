package auto

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/iopath/iopath/batch"
	"github.com/iopath/iopath/engine"
	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/internal/testenv"
)

// TestDecideOneFile checks that Decide measures residency itself and
// chooses by it, on a file it does not change.
func TestDecideOneFile(t *testing.T) {
	t.Setenv(EnvEngine, "")
	dir := dropDir(t)
	path := writeFile(t, dir, "big", 8<<20)
	for _, kind := range []Kind{WholeFile, Blocks, Positioned} {
		t.Run(kind.String(), func(t *testing.T) {
			w := Workload{Kind: kind, Path: path, Resident: -1}
			warm := Decide(w, realEngines())
			if want := Choose(Workload{Kind: kind, Path: path, Size: 8 << 20, Resident: 1}, CurrentEnv(realEngines())); warm != want {
				t.Errorf("cached file: Decide = %+v, want Choose with Resident 1 = %+v", warm, want)
			}
			drop(t, path, 0, 0)
			cold := Decide(w, realEngines())
			// Decide measures the residency only when it changes how
			// the file is read; the rule that names it may differ.
			want := Choose(Workload{Kind: kind, Path: path, Size: 8 << 20, Resident: 0}, CurrentEnv(realEngines()))
			if how := func(c Choice) Choice { c.Rule, c.Reason = "", ""; return c }; how(cold) != how(want) {
				t.Errorf("dropped file: Decide = %+v, want Choose with Resident 0 = %+v", cold, want)
			}
			// Reading it back makes it cached again for the next kind.
			if _, err := os.ReadFile(path); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestDecideUnknown checks that what cannot be measured does not fail
// Decide: the choice is Choose's with the residency unknown.
func TestDecideUnknown(t *testing.T) {
	t.Setenv(EnvEngine, "")
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	env := CurrentEnv(realEngines())
	for _, w := range []Workload{
		{Kind: WholeFile, Path: missing, Resident: -1},
		{Kind: Blocks, Path: dir, Resident: -1},
		{Kind: Positioned, Path: missing, Size: 1 << 30, Resident: -1},
		{Kind: ManyFiles, Paths: []string{missing, filepath.Join(missing, "x")}, Resident: -1},
		{Kind: ManyFiles, Resident: -1},
	} {
		got := Decide(w, realEngines())
		if want := Choose(w, env); got != want {
			t.Errorf("%v %q: Decide = %+v, want Choose with nothing measured = %+v", w.Kind, w.Path, got, want)
		}
	}
}

// TestDecideManyFiles checks the sample of a tree: its median size and
// residency, cached and dropped, given as a directory and as a list.
func TestDecideManyFiles(t *testing.T) {
	t.Setenv(EnvEngine, "")
	dir := dropDir(t)
	var files []string
	// Like gen's trees: files two levels down, 3 directories of 2 of 10.
	for i := range 60 {
		d := filepath.Join(dir, fmt.Sprintf("%02d", i%3), fmt.Sprintf("%02d", i%2))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		size := 4096
		if i%4 == 0 {
			size = 64 << 10
		}
		files = append(files, writeFile(t, d, fmt.Sprintf("f%03d", i), size))
	}
	slices.Sort(files)
	for _, paths := range [][]string{{dir}, files, {dir + "/"}} {
		s := sampleFiles(paths)
		if s.files < 16 || s.medianSize != 4096 || s.resident < 0.9 {
			t.Errorf("cached %d paths: sample %+v, want >= 16 files, median 4096, resident ~1", len(paths), s)
		}
	}
	env := CurrentEnv(realEngines())
	w := Workload{Kind: ManyFiles, Paths: []string{dir}, Resident: -1}
	if got, want := Decide(w, realEngines()), Choose(Workload{Kind: ManyFiles, Paths: w.Paths, Size: 4096, Resident: 1}, env); got != want {
		t.Errorf("cached tree: Decide = %+v, want %+v", got, want)
	}
	for _, f := range files {
		drop(t, f, 0, 0)
	}
	for _, paths := range [][]string{{dir}, files} {
		if s := sampleFiles(paths); s.resident > 0.1 {
			t.Errorf("dropped %d paths: sample %+v, want resident ~0", len(paths), s)
		}
	}
	if got, want := Decide(w, realEngines()), Choose(Workload{Kind: ManyFiles, Paths: w.Paths, Size: 4096, Resident: 0}, env); got != want {
		t.Errorf("dropped tree: Decide = %+v, want %+v", got, want)
	}
}

// TestSampleBound checks that the sample's cost does not grow with the
// tree: at most maxSampleFiles files and sampleDirs directory reads, on a
// tree wider and deeper than the bounds.
func TestSampleBound(t *testing.T) {
	dir := t.TempDir()
	// 3 levels of 6 directories (216 leaves), 3 files in each leaf: 648
	// files, more leaves than sampleDirs and more files than
	// maxSampleFiles, and the files 3 levels down.
	for a := range 6 {
		for b := range 6 {
			for c := range 6 {
				d := filepath.Join(dir, fmt.Sprint(a), fmt.Sprint(b), fmt.Sprint(c))
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
				for f := range 3 {
					if err := os.WriteFile(filepath.Join(d, fmt.Sprint(f)), []byte("x"), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
	s := sampleFiles([]string{dir})
	if s.dirReads > sampleDirs || s.files > maxSampleFiles {
		t.Errorf("sample read %d directories and %d files; bounds %d and %d", s.dirReads, s.files, sampleDirs, maxSampleFiles)
	}
	if s.files == 0 || s.medianSize != 1 {
		t.Errorf("sample %+v found no files 3 levels down", s)
	}
	// A list longer than the bound is sampled, not read whole.
	var list []string
	for i := range 10 * maxSampleFiles {
		list = append(list, filepath.Join(dir, "missing", fmt.Sprint(i)))
	}
	if s := sampleFiles(list); s.files != 0 || s.resident != -1 || s.dirReads != 0 {
		t.Errorf("missing files: sample %+v, want nothing measured", s)
	}
}

// TestDecideReadOnly checks that Decide changes no file it looks at and
// leaks no descriptor.
func TestDecideReadOnly(t *testing.T) {
	dir := dropDir(t)
	path := writeFile(t, dir, "data", 5<<20+123)
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	small := writeFile(t, sub, "small", 100)
	type state struct {
		size        int64
		mtime, ctim int64
		data        []byte
	}
	get := func(p string) state {
		var st sys.Stat_t
		if err := sys.Stat(p, &st); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return state{st.Size, st.Mtim.Nano(), st.Ctim.Nano(), b}
	}
	before := map[string]state{path: get(path), small: get(small)}
	fds := testenv.OpenFDs(t)
	for range 3 {
		for _, w := range []Workload{
			{Kind: WholeFile, Path: path, Resident: -1},
			{Kind: Blocks, Path: path, Resident: -1},
			{Kind: Positioned, Path: path, Resident: -1},
			{Kind: ManyFiles, Paths: []string{dir}, Resident: -1},
			{Kind: ManyFiles, Paths: []string{path, small}, Resident: -1},
		} {
			Decide(w, realEngines())
		}
	}
	if got := testenv.OpenFDs(t); got != fds {
		t.Errorf("open descriptors: %d before Decide, %d after", fds, got)
	}
	for p, b := range before {
		a := get(p)
		if a.size != b.size || a.mtime != b.mtime || a.ctim != b.ctim || !bytes.Equal(a.data, b.data) {
			t.Errorf("%s changed: size %d → %d, mtime %v → %v, ctime %v → %v, content equal %v",
				p, b.size, a.size, b.mtime, a.mtime, b.ctim, a.ctim, bytes.Equal(a.data, b.data))
		}
	}
}

// TestChoicesRegistered checks, over a grid of workloads and
// environments, that every Choice names an engine registered in engine
// (one file) or batch (many files) that can run in that environment, with
// Workers >= 1 and within bounds, a known rule and a reason.
func TestChoicesRegistered(t *testing.T) {
	ids := append(RuleIDs(), RuleOverride)
	overrides := []string{"", "pread", "mmap", "io_uring", "raw", "pool", "readfile", "archive", "null", "bogus", " pread "}
	n := 0
	for _, kind := range []Kind{WholeFile, Blocks, Positioned, ManyFiles} {
		for _, size := range []int64{0, 4096, SmallFile - 1, SmallFile, 1 << 30} {
			for _, res := range []float64{-1, 0, 0.5, cachedAt, 1} {
				for _, direct := range []bool{false, true} {
					for _, env := range testEnvs() {
						for _, o := range overrides {
							env.Override = o
							w := Workload{Kind: kind, Path: "/x", Paths: []string{"/x"}, Size: size, Direct: direct, Resident: res}
							c := Choose(w, env)
							n++
							checkChoice(t, w, env, c, ids)
						}
					}
				}
			}
		}
	}
	t.Logf("%d choices checked", n)
}

func checkChoice(t *testing.T, w Workload, env Env, c Choice, ids []string) {
	t.Helper()
	var names []string
	if w.Kind == ManyFiles {
		names = batch.Names()
	} else {
		names = engine.Names()
	}
	bad := func(format string, args ...any) {
		t.Helper()
		t.Errorf("%+v in %s: %+v: %s", w, describe(env), c, fmt.Sprintf(format, args...))
	}
	if !slices.Contains(names, c.Engine) || c.Engine == "null" || c.Engine == "archive" {
		bad("engine %q is not one of %v", c.Engine, names)
	}
	// Workers: at most one per core (GOMAXPROCS, taken as 1 when < 1) for
	// engines that copy; more only for goroutines that wait on the device
	// (rules without io_uring for uncached or O_DIRECT data) or for the
	// pool engine, whose goroutines are its queue.
	g := max(1, env.GOMAXPROCS)
	ioBound := map[string]bool{"many-uncached-no-uring": true, "direct-no-uring": true,
		"positioned-direct-no-uring": true, "positioned-uncached-no-uring": true, RuleOverride: true}
	switch {
	case c.Workers < 1:
		bad("workers %d < 1", c.Workers)
	case c.Engine == "pool" && c.Workers > poolWorkers:
		bad("pool workers %d > %d", c.Workers, poolWorkers)
	case c.Engine != "pool" && c.Workers > max(g, ioWorkers):
		bad("workers %d above max(GOMAXPROCS %d, %d)", c.Workers, g, ioWorkers)
	case c.Engine != "pool" && c.Workers > g && !ioBound[c.Rule]:
		bad("workers %d above GOMAXPROCS %d for a rule whose workers copy", c.Workers, g)
	}
	if c.QueueDepth < 0 || c.BlockSize < 0 {
		bad("negative queue depth or block size")
	}
	if !slices.Contains(ids, c.Rule) {
		bad("rule %q is not one of %v", c.Rule, ids)
	}
	if c.Reason == "" {
		bad("no reason")
	}
	if c.Engine == "io_uring" && uringUnavailable(w.Kind, normalize(env)) != "" {
		bad("io_uring chosen where it cannot run")
	}
	if c.Engine == "mmap" && w.Direct {
		bad("mmap chosen with O_DIRECT")
	}
}
