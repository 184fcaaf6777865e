package bench

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/iopath/iopath/internal/testenv"
)

// Profiles: the names are known before the first run; existing ones are
// refused unless ProfileReplace; each is renamed into place from a
// temporary file, and nothing else is left in the directory.
func TestProfileFiles(t *testing.T) {
	path := testFile(t, 1<<20)
	dir := filepath.Join(t.TempDir(), "prof") // made by Measure
	cfg := Config{Path: path, Engines: []string{"pread", "mmap"}, Caches: []Cache{Warm, Direct}, Runs: 2, ProfileDir: dir}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	want := cfg.RunFiles()
	// mmap cannot run direct: no profile is planned for it.
	if len(want) != 6 || !slices.Contains(want, filepath.Join(dir, "pread-direct-seq-bs128KiB-w1-run2.pprof")) ||
		slices.Contains(want, filepath.Join(dir, "mmap-direct-seq-bs128KiB-w1-run1.pprof")) {
		t.Fatalf("ProfileFiles = %q", want)
	}
	cfg.Caches = []Cache{Warm}
	want = cfg.RunFiles()
	first := want[0] // the first a Measure checks

	fds := testenv.OpenFDs(t)
	var tracked []string
	cfg.TrackTemp = func(p string) func() {
		tracked = append(tracked, p)
		return func() {}
	}
	rep, err := Measure(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	have, _ := filepath.Glob(filepath.Join(dir, "*"))
	hidden, _ := filepath.Glob(filepath.Join(dir, ".*"))
	slices.Sort(want)
	if !slices.Equal(have, want) || len(hidden) != 0 {
		t.Fatalf("the directory holds %q and %q, want %q", have, hidden, want)
	}
	for _, r := range rep.Results {
		for _, run := range r.Runs {
			if !slices.Contains(want, run.Profile) {
				t.Errorf("%s run names profile %q", r.Engine, run.Profile)
			}
		}
	}
	if len(tracked) != len(want) || !strings.HasSuffix(tracked[0], ".tmp") {
		t.Errorf("temporary files tracked: %q", tracked)
	}
	if n := testenv.OpenFDs(t); n != fds {
		t.Errorf("%d descriptors open after Measure, %d before", n, fds)
	}

	before, _ := os.ReadFile(first)
	if _, err := Measure(context.Background(), cfg); !errors.Is(err, fs.ErrExist) || !strings.Contains(err.Error(), first) {
		t.Fatalf("over existing profiles: %v; want a refusal naming the first", err)
	}
	if after, _ := os.ReadFile(first); string(after) != string(before) {
		t.Fatal("a refused Measure changed a profile")
	}
	cfg.ProfileReplace = true
	if _, err := Measure(context.Background(), cfg); err != nil {
		t.Fatalf("with ProfileReplace: %v", err)
	}
	if hidden, _ := filepath.Glob(filepath.Join(dir, ".*")); len(hidden) != 0 {
		t.Errorf("temporary files left: %q", hidden)
	}
}
