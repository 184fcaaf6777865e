package iopath

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/iopath/iopath/batch"
	"github.com/iopath/iopath/internal/auto"
	"github.com/iopath/iopath/internal/testenv"
)

// TestPublicPlan: Plan says what each entry point does, by the same decision
// the call makes, and refuses what the call refuses, leaking nothing.
func TestPublicPlan(t *testing.T) {
	testenv.CheckFDs(t)
	dir := t.TempDir()
	small := writeFile(t, dir, content(4<<10, 1))
	big := writeFile(t, dir, content(3<<20, 2))
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}

	c, err := Plan(small, ForReadFile)
	if err != nil || c.Engine != "read" || c.Workers != 1 || c.Rule != ruleSmallFile || c.Reason == "" {
		t.Errorf("ReadFile of 4 KiB: %+v, %v", c, err)
	}
	for _, a := range []Access{ForReadFile, ForScan} {
		if c, err := Plan(empty, a); err != nil || c.Rule != ruleUnsized || c.Engine != "read" {
			t.Errorf("%v of an empty file: %+v, %v", a, c, err)
		}
	}
	if c, err := Plan("/proc/self/status", ForScan); err != nil || c.Rule != ruleUnsized {
		t.Errorf("Scan of /proc/self/status: %+v, %v", c, err)
	}
	for _, a := range []Access{ForReadFile, ForScan, ForOpen} {
		c, err := Plan(big, a)
		if err != nil || !slices.Contains(auto.RuleIDs(), c.Rule) || c.Workers < 1 || c.Reason == "" {
			t.Errorf("%v of 3 MiB: %+v, %v", a, c, err)
		}
		opts, bs := []Option{WithEngine("pread"), WithWorkers(3), WithBlockSize(64 << 10)}, 64<<10
		if a == ForOpen { // each ReadAt says its own size
			opts, bs = opts[:2], 0
		}
		c, err = Plan(big, a, opts...)
		if err != nil || c.Engine != "pread" || c.Workers != 3 || c.BlockSize != bs || c.Rule != ruleWithEngine {
			t.Errorf("%v of 3 MiB with pread ×3: %+v, %v", a, c, err)
		}
	}
	c, err = Plan(dir, ForReadFiles)
	if err != nil || !slices.Contains(batch.Names(), c.Engine) || c.Workers < 1 {
		t.Errorf("ReadFiles of a directory: %+v, %v", c, err)
	}

	// Open's choice is what Plan foresaw.
	f, err := Open(big)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Plan(big, ForOpen)
	if got := f.Choice(); err != nil || got != want {
		t.Errorf("File.Choice %+v, Plan %+v (%v)", got, want, err)
	}
	f.Close()

	// IOPATH_ENGINE sends even a small file to Auto, which obeys it.
	t.Setenv(auto.EnvEngine, "pread")
	if c, err := Plan(small, ForReadFile); err != nil || c.Engine != "pread" || c.Rule != auto.RuleOverride {
		t.Errorf("ReadFile of 4 KiB with %s=pread: %+v, %v", auto.EnvEngine, c, err)
	}
	os.Unsetenv(auto.EnvEngine)

	for _, c := range []struct {
		path   string
		access Access
		opts   []Option
		is     error
		says   string
	}{
		{filepath.Join(dir, "missing"), ForReadFile, nil, fs.ErrNotExist, "missing"},
		{filepath.Join(dir, "missing"), ForScan, nil, fs.ErrNotExist, "missing"},
		{filepath.Join(dir, "missing"), ForOpen, nil, fs.ErrNotExist, "missing"},
		{dir, ForReadFile, nil, syscall.EISDIR, dir},
		{dir, ForScan, nil, syscall.EISDIR, dir},
		{fifo, ForReadFile, nil, ErrNotRegular, "fifo"},
		{fifo, ForScan, nil, ErrNotRegular, "fifo"},
		{big, ForReadFile, []Option{WithWorkers(-1)}, nil, "workers"},
		{big, Access(9), nil, nil, "Access(9)"},
		{big, ForOpen, []Option{WithBlockSize(4096)}, nil, "WithBlockSize"},
	} {
		got, err := Plan(c.path, c.access, c.opts...)
		if err == nil || c.is != nil && !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.says) || got != (Choice{}) {
			t.Errorf("Plan(%s, %v, %d options) = %+v, %v; want an error wrapping %v that says %q", c.path, c.access, len(c.opts), got, err, c.is, c.says)
		}
	}
}

// A cached file of 8 to 32 MiB is read by ReadFile as os.ReadFile reads
// it, in one read(2) (rule mid-cached-whole), and ReadFileBuf too; an
// explicit worker count still takes the engine.
func TestReadFileMidCached(t *testing.T) {
	testenv.CheckFDs(t)
	t.Setenv(auto.EnvEngine, "")
	want := content(12<<20+5, 7)
	path := writeFile(t, t.TempDir(), want)
	if _, err := os.ReadFile(path); err != nil { // cached
		t.Fatal(err)
	}
	c, err := Plan(path, ForReadFile)
	if err != nil || c.Rule != "mid-cached-whole" || c.Engine != "read" || c.Workers != 1 {
		t.Fatalf("Plan of a cached 12 MiB file: %+v, %v", c, err)
	}
	b, err := ReadFile(path)
	if err != nil || !bytes.Equal(b, want) {
		t.Fatalf("ReadFile: %d bytes, %v", len(b), err)
	}
	buf, err := ReadFileBuf(path)
	if err != nil || !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("ReadFileBuf: %v", err)
	}
	buf.Release()
	c, err = Plan(path, ForReadFile, WithWorkers(2))
	if err != nil || c.Workers != 2 || c.Engine != "read" {
		t.Errorf("Plan with WithWorkers(2): %+v, %v", c, err)
	}
	if b, err := ReadFile(path, WithWorkers(2)); err != nil || !bytes.Equal(b, want) {
		t.Errorf("ReadFile with WithWorkers(2): %d bytes, %v", len(b), err)
	}
}
