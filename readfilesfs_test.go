package iopath

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/iopath/iopath/internal/testenv"
)

// fsResult is what ReadFilesFS handed fn for one name.
type fsResult struct {
	data string
	err  error
}

// readFS runs ReadFilesFS and collects what fn saw, by name.
func readFS(t *testing.T, fsys fs.FS, names []string, opts ...Option) (map[string]fsResult, error) {
	t.Helper()
	var mu sync.Mutex
	got := map[string]fsResult{}
	err := ReadFilesFS(context.Background(), fsys, names, func(name string, data []byte, err error) error {
		mu.Lock()
		defer mu.Unlock()
		if _, dup := got[name]; dup {
			t.Errorf("%s handed over twice", name)
		}
		got[name] = fsResult{string(data), err}
		return nil
	}, opts...)
	return got, err
}

// ReadFilesFS reads every file of an fstest.MapFS, walking directories,
// and hands a missing name its own error without stopping the others,
// with every engine that applies to an fs.FS.
func TestReadFilesFSMap(t *testing.T) {
	fsys := fstest.MapFS{
		"top.txt":       {Data: []byte("top")},
		"dir/a.txt":     {Data: []byte("a")},
		"dir/sub/b.txt": {Data: []byte("bb")},
		"dir/empty":     {Data: []byte{}},
		"other/c.txt":   {Data: []byte("not asked for")},
	}
	for _, opts := range [][]Option{nil, {WithEngine("readfile")}, {WithEngine("pool"), WithWorkers(3)}, {WithWorkers(1)}} {
		got, err := readFS(t, fsys, []string{"top.txt", "dir", "missing.txt"}, opts...)
		if err != nil {
			t.Fatalf("%d options: %v", len(opts), err)
		}
		want := map[string]string{"top.txt": "top", "dir/a.txt": "a", "dir/sub/b.txt": "bb", "dir/empty": ""}
		for name, data := range want {
			if r, ok := got[name]; !ok || r.err != nil || r.data != data {
				t.Errorf("%d options: %s: %+v, want %q", len(opts), name, r, data)
			}
		}
		var pe *fs.PathError
		if r := got["missing.txt"]; r.data != "" || !errors.Is(r.err, fs.ErrNotExist) || !errors.As(r.err, &pe) || pe.Path != "missing.txt" {
			t.Errorf("%d options: missing.txt: %+v", len(opts), r)
		}
		if len(got) != len(want)+1 {
			t.Errorf("%d options: %d names handed over, want %d: %v", len(opts), len(got), len(want)+1, slices.Sorted(mapKeys(got)))
		}
	}
}

func mapKeys(m map[string]fsResult) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// The same through os.DirFS, where a directory named directly is walked
// and "." is the whole tree.
func TestReadFilesFSDir(t *testing.T) {
	testenv.CheckFDs(t)
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "s"), 0o755)
	os.WriteFile(filepath.Join(dir, "x"), []byte("xx"), 0o644)
	os.WriteFile(filepath.Join(dir, "s", "y"), []byte("yyy"), 0o644)
	got, err := readFS(t, os.DirFS(dir), []string{"."}, WithWorkers(2))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["x"].data != "xx" || got["s/y"].data != "yyy" || got["x"].err != nil || got["s/y"].err != nil {
		t.Errorf("os.DirFS: %+v", got)
	}
}

// fn's error stops the walk and the readers, and comes back as it is; a
// panic in fn goes on in the caller's goroutine once the readers stop.
func TestReadFilesFSStop(t *testing.T) {
	fsys := fstest.MapFS{}
	for i := range 500 {
		fsys[filepath.Join("d", string(rune('a'+i%26)), string(rune('a'+i/26)))] = &fstest.MapFile{Data: []byte("z")}
	}
	stop := errors.New("stop")
	var mu sync.Mutex
	calls := 0
	err := ReadFilesFS(context.Background(), fsys, []string{"d"}, func(string, []byte, error) error {
		mu.Lock()
		defer mu.Unlock()
		calls++
		return stop
	}, WithWorkers(4))
	if err != stop || calls > 4 {
		t.Errorf("fn's error: %v after %d calls, want it itself after at most 4 (one per reader)", err, calls)
	}
	// goleak in TestMain checks that the readers are gone.
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("recovered %v, want fn's panic", r)
			}
		}()
		ReadFilesFS(context.Background(), fsys, []string{"d"}, func(string, []byte, error) error { panic("boom") }, WithWorkers(4))
		t.Error("no panic")
	}()
}
