package profile

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/iopath/iopath/internal/sys"
)

func sample(k Key) *Profile {
	return &Profile{Version: Version, Key: k, Filesystems: map[string]*Section{
		"ext4": {Tuned: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC), Rules: []Rule{
			{Kind: WholeFile, MinSize: 2 << 20, MaxSize: 8 << 20, Engine: "pread", Workers: 1, Why: "a"},
			{Kind: WholeFile, MinSize: 8 << 20, Engine: "mmap", Workers: PerCore, Why: "b"},
			{Kind: Blocks, MinSize: 1 << 20, MaxSize: 4 << 20, Engine: "read", Workers: 1, Why: "c"},
		}},
		"xfs": {Rules: []Rule{{Kind: Blocks, MinSize: 512 << 10, MaxSize: 1 << 20, Engine: "pread", Workers: 2, Why: "d"}}},
	}}
}

func TestLookup(t *testing.T) {
	p := sample(CurrentKey())
	for _, c := range []struct {
		kind, fs string
		size     int64
		want     string // Why of the rule, "" for none
	}{
		{WholeFile, "ext4", 2<<20 - 1, ""},
		{WholeFile, "ext4", 2 << 20, "a"},
		{WholeFile, "ext4", 8<<20 - 1, "a"},
		{WholeFile, "ext4", 8 << 20, "b"},
		{WholeFile, "ext4", 1 << 40, "b"},
		{WholeFile, "xfs", 8 << 20, ""},
		{WholeFile, "tmpfs", 8 << 20, ""},
		{WholeFile, "", 8 << 20, ""},
		{Blocks, "ext4", 1 << 20, "c"},
		{Blocks, "ext4", 4 << 20, ""},
		{Blocks, "xfs", 600 << 10, "d"},
		{"positioned", "ext4", 8 << 20, ""},
	} {
		r, s, ok := p.Lookup(c.kind, c.fs, c.size)
		if ok != (c.want != "") || r.Why != c.want || (ok && s != p.Filesystems[c.fs]) {
			t.Errorf("Lookup(%s, %s, %d) = %q, %v; want %q", c.kind, c.fs, c.size, r.Why, ok, c.want)
		}
	}
	if got := p.Floor(WholeFile); got != 2<<20 {
		t.Errorf("Floor(whole-file) = %d, want 2 MiB", got)
	}
	if got := p.Floor(Blocks); got != 512<<10 {
		t.Errorf("Floor(blocks) = %d, want 512 KiB (xfs's)", got)
	}
	if !p.Covers(Blocks, 600<<10) || p.Covers(Blocks, 100<<10) || p.Covers(WholeFile, 1<<20) {
		t.Error("Covers does not follow the rules of every section")
	}
	var none *Profile
	if none.Floor(WholeFile) != math.MaxInt64 || none.Covers(WholeFile, 1<<30) || none.Path() != "" {
		t.Error("a nil profile covers something")
	}
	if _, _, ok := none.Lookup(WholeFile, "ext4", 1<<30); ok {
		t.Error("a nil profile has a rule")
	}
	if w := (Rule{Workers: PerCore}).WorkersFor(2); w != 2 {
		t.Errorf("PerCore with GOMAXPROCS 2: %d workers", w)
	}
	if w := (Rule{Workers: PerCore}).WorkersFor(64); w != MaxCoreWorkers {
		t.Errorf("PerCore with GOMAXPROCS 64: %d workers, want the cap %d", w, MaxCoreWorkers)
	}
	if w := (Rule{Workers: 3}).WorkersFor(64); w != 3 {
		t.Errorf("3 workers with GOMAXPROCS 64: %d", w)
	}
}

func TestCheck(t *testing.T) {
	k := Key{CPUModel: "AMD EPYC", CPUs: 2, Kernel: "6.18.44"}
	if err := sample(k).Check(k); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		edit func(p *Profile)
		want string
	}{
		{"version", func(p *Profile) { p.Version = 99 }, "format version 99"},
		{"cpu", func(p *Profile) { p.Key.CPUModel = "Intel Xeon" }, `made for CPU "Intel Xeon" ×2, kernel 6.18.44; this machine is CPU "AMD EPYC"`},
		{"cpus", func(p *Profile) { p.Key.CPUs = 8 }, "×8"},
		{"kernel", func(p *Profile) { p.Key.Kernel = "6.1.0" }, "kernel 6.1.0"},
		{"kind", func(p *Profile) { p.Filesystems["ext4"].Rules[0].Kind = "positioned" }, `kind "positioned"`},
		{"engine", func(p *Profile) { p.Filesystems["ext4"].Rules[0].Engine = "splice" }, `engine "splice"`},
		{"workers", func(p *Profile) { p.Filesystems["ext4"].Rules[0].Workers = -1 }, "-1 workers"},
		{"range", func(p *Profile) { p.Filesystems["ext4"].Rules[0].MaxSize = 1 }, "not a range"},
		{"nil section", func(p *Profile) { p.Filesystems["btrfs"] = nil }, "has no section"},
	} {
		p := sample(k)
		c.edit(p)
		err := p.Check(k)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
}

func write(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// The process's profile comes from where IOPATH_PROFILE says; one that is
// missing, broken or another machine's is not used, and the status says
// why.
func TestLook(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", dir)
	k := CurrentKey()

	t.Setenv(Env, "off")
	if s := Look(); s.Profile != nil || s.Status != "off (IOPATH_PROFILE=off)" {
		t.Errorf("off: %+v", s)
	}

	t.Setenv(Env, "")
	def, err := DefaultPath(k)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(def) != filepath.Join(dir, "iopath") || !strings.HasPrefix(filepath.Base(def), "machine-") {
		t.Errorf("default path %s is not in $XDG_CACHE_HOME/iopath", def)
	}
	if again, _ := DefaultPath(k); again != def {
		t.Errorf("default path changes: %s, %s", def, again)
	}
	other := k
	other.Kernel += "-other"
	if o, _ := DefaultPath(other); o == def {
		t.Error("another kernel's profile has this one's name")
	}
	if s := Look(); s.Profile != nil || !strings.Contains(s.Status, "none at "+def+" (run iopath tune)") {
		t.Errorf("none: %+v", s)
	}
	if err := os.MkdirAll(filepath.Dir(def), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, def, sample(k))
	s := Look()
	if s.Profile == nil || s.Profile.Path() != def || s.Status != "in use: "+def {
		t.Fatalf("valid: %+v", s)
	}
	if _, _, ok := s.Profile.Lookup(WholeFile, "ext4", 8<<20); !ok {
		t.Error("the profile read has lost its rules")
	}

	// IOPATH_PROFILE=FILE: that file, and nothing else.
	file := filepath.Join(dir, "mine.json")
	t.Setenv(Env, file)
	if s := Look(); s.Profile != nil || !strings.Contains(s.Status, "none at "+file) {
		t.Errorf("a missing file: %+v", s)
	}
	if err := os.WriteFile(file, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if s := Look(); s.Profile != nil || !strings.HasPrefix(s.Status, "ignored: "+file+": not a machine profile") {
		t.Errorf("broken: %+v", s)
	}
	write(t, file, sample(other))
	if s := Look(); s.Profile != nil || !strings.Contains(s.Status, "ignored: "+file+": made for") {
		t.Errorf("another machine's: %+v", s)
	}
}

// SetActive replaces the process's profile and restore brings it back.
func TestSetActive(t *testing.T) {
	before := Current()
	p := sample(CurrentKey())
	restore := SetActive(State{Profile: p, Status: "test"})
	if Active() != p || Current().Status != "test" {
		t.Error("SetActive did not take")
	}
	restore()
	if Current() != before {
		t.Error("restore did not bring the state back")
	}
}

// TestReadNotRegular: IOPATH_PROFILE naming a FIFO, a directory or a
// device is refused at once (a FIFO would block a plain open until a
// writer came), and an oversized file is not read whole.
func TestReadNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{fifo, dir, "/dev/zero"} {
		if _, err := Read(path); !errors.Is(err, sys.ErrNotRegular) || !strings.Contains(err.Error(), path) {
			t.Errorf("Read(%s) = %v, want not a regular file", path, err)
		}
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, make([]byte, maxBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(big); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("Read(big) = %v", err)
	}
}
