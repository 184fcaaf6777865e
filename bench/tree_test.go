package bench

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iopath/iopath/batch"
	"github.com/iopath/iopath/gen"
)

func testTree(t *testing.T, files int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tree")
	d, err := gen.ParseDist("1KiB-20KiB")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gen.Tree(context.Background(), dir, gen.TreeOptions{Files: files, Size: d, Seed: 7}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// packTree packs dir into a new archive of that name (zstd for .zst) and
// returns its path.
func packTree(t *testing.T, dir, name string) string {
	t.Helper()
	pack := filepath.Join(t.TempDir(), name)
	f, err := os.Create(pack)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := batch.Pack(context.Background(), dir, f, batch.PackOptions{Zstd: strings.HasSuffix(name, ".zst")}); err != nil {
		t.Fatal(err)
	}
	return pack
}

func TestMeasureTree(t *testing.T) {
	dir := testTree(t, 300)
	pack := packTree(t, dir, "tree.tar.zst")
	rep, err := MeasureTree(context.Background(), TreeConfig{
		Dir: dir, Archive: pack, Runs: 2, Workers: []int{1, 2}, PoolWorkers: 8,
	})
	if err != nil {
		t.Fatal(err)
	}
	// gen's marker is not one of the tree's files, for any engine (the
	// archive holds it too).
	if rep.Tree == nil || rep.Tree.Files != 300 || rep.Kind() != KindTree {
		t.Fatalf("tree info %+v", rep.Tree)
	}
	seen := map[string]bool{}
	for _, r := range rep.Results {
		seen[r.Engine] = true
		if r.Error != "" {
			if strings.Contains(r.Error, "not supported") {
				continue // io_uring unavailable here: the row says why
			}
			t.Errorf("%s ×%d %s: %s", r.Engine, r.Workers, r.Cache, r.Error)
			continue
		}
		if r.ChecksumOK == nil || !*r.ChecksumOK || r.Files != rep.Tree.Files || r.FileErrors != 0 {
			t.Errorf("%s ×%d %s: checksum %v, %d files of %d, %d errors", r.Engine, r.Workers, r.Cache, r.ChecksumOK, r.Files, rep.Tree.Files, r.FileErrors)
		}
		if r.FilesPerS <= 0 || r.CPUSPer1kFiles <= 0 || len(r.Runs) != 2 {
			t.Errorf("%s ×%d %s: figures missing: %+v", r.Engine, r.Workers, r.Cache, r)
		}
		if r.Engine == "raw" && (r.SyscallsPerFile < 3 || r.SyscallsPerFile > 3.5) {
			t.Errorf("raw: %.2f syscalls per file, want 3 (openat, read, close) and a little for large files", r.SyscallsPerFile)
		}
		if r.Cache == "cold" && r.Runs[0].ResidentBefore > 0.1 {
			t.Errorf("%s cold run started with %.0f%% cached", r.Engine, 100*r.Runs[0].ResidentBefore)
		}
	}
	for _, e := range batch.Names() {
		if !seen[e] {
			t.Errorf("no row for engine %s", e)
		}
	}
}

// TestMeasureTreeStaleArchive: a pack made before a file of the tree
// changed fails the archive rows alone, and the error names the pack and
// how to make it again, not an engine that delivered wrong bytes.
func TestMeasureTreeStaleArchive(t *testing.T) {
	dir := testTree(t, 20)
	pack := packTree(t, dir, "tree.tar")
	if err := os.WriteFile(filepath.Join(dir, "changed"), []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := MeasureTree(context.Background(), TreeConfig{
		Dir: dir, Archive: pack, Runs: 1, Engines: []string{"readfile", "archive"}, Caches: []Cache{Warm},
	})
	if !errors.Is(err, ErrChecksum) || !strings.Contains(err.Error(), pack+" does not hold the files of "+dir) ||
		!strings.Contains(err.Error(), "iopath pack "+dir+" -o "+pack+" --force") {
		t.Fatalf("err = %v", err)
	}
	for _, r := range rep.Results {
		if failed := r.ChecksumOK != nil && !*r.ChecksumOK; failed != (r.Engine == "archive") {
			t.Errorf("%s: checksum ok %v, error %q", r.Engine, r.ChecksumOK, r.Error)
		}
	}
}

func TestMeasureTreeBadInput(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	os.WriteFile(file, []byte("x"), 0o644)
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)
	for _, tc := range []struct {
		cfg  TreeConfig
		want string
	}{
		{TreeConfig{Dir: filepath.Join(dir, "nope")}, "no such file"},
		{TreeConfig{Dir: file}, "not a directory"},
		{TreeConfig{Dir: empty}, "no regular files"},
		{TreeConfig{Dir: dir, Engines: []string{"nope"}}, "unknown batch engine"},
		{TreeConfig{Dir: dir, Caches: []Cache{Direct}}, "warm and cold"},
		{TreeConfig{Dir: dir, Workers: []int{0}}, "workers"},
	} {
		_, err := MeasureTree(context.Background(), tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v, want %q", tc.cfg, err, tc.want)
		}
	}
}
