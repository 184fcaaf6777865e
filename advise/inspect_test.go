package advise

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/iopath/iopath/gen"
	"github.com/iopath/iopath/internal/testenv"
)

func TestMain(m *testing.M) {
	testenv.NoMachineProfile()
	goleak.VerifyTestMain(m)
}

// writeFiles writes files of the given sizes under dir, with distinct
// contents.
func writeFiles(t *testing.T, dir string, sizes map[string]int) {
	t.Helper()
	for name, size := range sizes {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		// byte(i*7 + len(name)) repeats every 256 bytes.
		var period [256]byte
		for i := range period {
			period[i] = byte(i*7 + len(name))
		}
		b := bytes.Repeat(period[:], size/256+1)[:size]
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestInspectTree(t *testing.T) {
	dir := t.TempDir()
	sizes := map[string]int{}
	for i := range 100 {
		sizes[fmt.Sprintf("d%d/f%03d", i%3, i)] = (i + 1) * 100 // 100 .. 10,000
	}
	writeFiles(t, dir, sizes)
	// What batch's walk does not read: a FIFO, a socket-like special file,
	// a symlink to a directory, a broken symlink. A symlink to a file is
	// read.
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"todir": "d0", "broken": "nowhere", "tofile": "d1/f001"} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	inv, err := Inspect(context.Background(), []string{dir}, time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if inv.Kind != ManyFiles || inv.Files != 101 || inv.AtLeast {
		t.Fatalf("kind %s, %d files (at least: %v); want many_files, 101", inv.Kind, inv.Files, inv.AtLeast)
	}
	var total int64
	for _, s := range sizes {
		total += int64(s)
	}
	if inv.Bytes != total+200 || inv.Max != 10_000 || inv.Median != 5000 || inv.P90 != 9000 {
		t.Errorf("bytes %d (want %d), median %d, p90 %d, max %d", inv.Bytes, total+200, inv.Median, inv.P90, inv.Max)
	}
	wantSkip := map[string]int64{
		"special file (FIFO, socket or device)": 1,
		"symlink to a directory (not walked)":   1,
		"broken symlink":                        1,
	}
	for k, v := range wantSkip {
		if inv.Skipped[k] != v {
			t.Errorf("skipped %q: %d, want %d (all: %v)", k, inv.Skipped[k], v, inv.Skipped)
		}
	}
	if len(inv.sample) != 101 {
		t.Fatalf("sample of %d files, want all 101", len(inv.sample))
	}
	for i := 1; i < len(inv.sample); i++ {
		if inv.sample[i-1].path >= inv.sample[i].path {
			t.Fatalf("sample not in walk order at %d: %s, %s", i, inv.sample[i-1].path, inv.sample[i].path)
		}
	}
}

func TestInspectSampleBound(t *testing.T) {
	dir := t.TempDir()
	sizes := map[string]int{}
	for i := range 300 {
		sizes[fmt.Sprintf("f%03d", i)] = 10
	}
	writeFiles(t, dir, sizes)
	// Listed, not sampled (sparse: no data written).
	if err := os.WriteFile(filepath.Join(dir, "big"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(dir, "big"), sampleFileMax+1); err != nil {
		t.Fatal(err)
	}
	inv, err := Inspect(context.Background(), []string{dir}, time.Time{}, 50)
	if err != nil {
		t.Fatal(err)
	}
	if inv.Files != 301 || len(inv.sample) != 50 {
		t.Fatalf("%d files, sample %d; want 301 and 50", inv.Files, len(inv.sample))
	}
	for _, s := range inv.sample {
		if strings.HasSuffix(s.path, "big") {
			t.Error("a file over 64 MiB is in the sample")
		}
	}
	if inv.Skipped[skipTooBig] != 1 {
		t.Errorf("skipped %v: want the big file counted", inv.Skipped)
	}
	// The same tree gives the same sample.
	again, _ := Inspect(context.Background(), []string{dir}, time.Time{}, 50)
	for i := range inv.sample {
		if inv.sample[i].path != again.sample[i].path {
			t.Fatal("two inspections of one tree sampled different files")
		}
	}
}

func TestInspectStopsListing(t *testing.T) {
	dir := t.TempDir()
	sizes := map[string]int{}
	for i := range 2000 {
		sizes[fmt.Sprintf("d%02d/f%04d", i/100, i)] = 1
	}
	writeFiles(t, dir, sizes)
	inv, err := Inspect(context.Background(), []string{dir}, time.Now().Add(-time.Second), 0)
	if err != nil {
		t.Fatal(err)
	}
	if !inv.AtLeast || inv.Files == 0 || inv.Files >= 2000 {
		t.Errorf("listing past its time: %d files, at least %v; want some, marked as a lower bound", inv.Files, inv.AtLeast)
	}
}

func TestInspectErrors(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]int{"file": 10, "empty": 0})
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	emptyDir := filepath.Join(dir, "emptydir")
	os.Mkdir(emptyDir, 0o755)
	missing := filepath.Join(dir, "missing")
	for _, tt := range []struct {
		name  string
		paths []string
		is    error
		msg   string
	}{
		{"missing", []string{missing}, fs.ErrNotExist, missing + ": no such file or directory"},
		{"missing among others", []string{filepath.Join(dir, "file"), missing}, fs.ErrNotExist, missing + ": no such file or directory"},
		{"fifo", []string{fifo}, nil, fifo + ": not a regular file or directory (a named pipe)"},
		{"empty dir", []string{emptyDir}, ErrNothingToRead, emptyDir + ": no regular files under it: nothing to read"},
		{"empty file", []string{filepath.Join(dir, "empty")}, ErrNothingToRead, "empty: the file is empty: nothing to read"},
		{"not a dir", []string{filepath.Join(dir, "file", "x")}, syscall.ENOTDIR, "file/x: not a directory"},
		{"twice", []string{filepath.Join(dir, "file"), dir + "/./file"}, nil, "given twice: it is " + filepath.Join(dir, "file") + " too"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			done := make(chan struct{})
			var err error
			go func() {
				defer close(done)
				_, err = Inspect(context.Background(), tt.paths, time.Time{}, 0)
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Inspect blocked")
			}
			var ie *InputError
			var pe *fs.PathError
			if !errors.As(err, &ie) || !errors.As(err, &pe) {
				t.Fatalf("got %T %v, want an *InputError wrapping an *fs.PathError", err, err)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("%v is not %v", err, tt.is)
			}
			if !strings.HasSuffix(err.Error(), tt.msg) || strings.Count(err.Error(), "\n") != 0 {
				t.Errorf("message %q, want one line ending %q", err.Error(), tt.msg)
			}
		})
	}
}

func TestInspectOneFile(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]int{"one": 12345})
	p := filepath.Join(dir, "one")
	inv, err := Inspect(context.Background(), []string{p}, time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if inv.Kind != OneFile || inv.Files != 1 || inv.Bytes != 12345 || inv.Median != 12345 || inv.Max != 12345 {
		t.Errorf("got %+v", inv)
	}
	// The same file twice would be counted, and read, twice: refused
	// (TestInspectErrors).
	if _, err = Inspect(context.Background(), []string{p, p}, time.Time{}, 0); err == nil {
		t.Errorf("the same path twice: accepted")
	}
}

// The marker gen --tree leaves at a tree's root is not one of its files;
// a file of the user's that only has the marker's name is.
func TestInspectGenTree(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tree")
	if _, err := gen.Tree(context.Background(), dir, gen.TreeOptions{Files: 30, Size: gen.FixedSize(1000)}); err != nil {
		t.Fatal(err)
	}
	inv, err := Inspect(context.Background(), []string{dir}, time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if inv.Files != 30 || inv.Bytes != 30*1000 || len(inv.Skipped) != 0 {
		t.Errorf("gen's tree of 30 files: %d files, %d bytes, skipped %v", inv.Files, inv.Bytes, inv.Skipped)
	}
	mine := t.TempDir()
	writeFiles(t, mine, map[string]int{"a": 10, gen.TreeMarker: 20})
	if inv, err := Inspect(context.Background(), []string{mine}, time.Time{}, 0); err != nil || inv.Files != 2 {
		t.Errorf("a user's %s: %v, %+v; want it counted", gen.TreeMarker, err, inv)
	}
}
