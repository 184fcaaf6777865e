package auto

import (
	"strings"
	"testing"
	"time"

	"github.com/iopath/iopath/internal/machine"
	"github.com/iopath/iopath/internal/profile"
	"github.com/iopath/iopath/internal/sys"
)

func testProfile() *profile.Profile {
	return &profile.Profile{Version: profile.Version, Filesystems: map[string]*profile.Section{
		"ext4": {Tuned: time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC), Rules: []profile.Rule{
			{Kind: profile.WholeFile, MinSize: 1 << 20, MaxSize: 16 << 20, Engine: "pread", Workers: 1, Why: "pread×1 won"},
			{Kind: profile.WholeFile, MinSize: 16 << 20, Engine: "mmap", Workers: profile.PerCore, Why: "mmap won"},
			{Kind: profile.Blocks, MinSize: 64 << 20, Engine: "io_uring", Workers: 1, Why: "io_uring won"},
		}},
	}}
}

// A machine profile's rule comes before the table for the kinds, sizes
// and filesystem it covers, for cached files (and small files whatever
// their state), never for O_DIRECT, and gives way to the table when its
// engine cannot run; IOPATH_ENGINE still overrides it.
func TestProfileRule(t *testing.T) {
	env := withUring(2)
	env.Profile = testProfile()
	noUring := withoutUring(2)
	noUring.Profile = env.Profile
	for _, c := range []struct {
		name     string
		w        Workload
		env      Env
		rule     string
		engine   string
		workers  int
		inReason string
	}{
		{"small cached", Workload{Kind: WholeFile, FS: "ext4", Size: 4 << 20, Resident: 1}, env, RuleProfile, "pread", 1, "machine profile, tuned 2026-11-26 on ext4: pread×1 won"},
		{"small cold", Workload{Kind: WholeFile, FS: "ext4", Size: 4 << 20, Resident: 0}, env, RuleProfile, "pread", 1, "pread×1 won"},
		{"below the rules", Workload{Kind: WholeFile, FS: "ext4", Size: 512 << 10, Resident: 1}, env, "small-file", "pread", 1, ""},
		{"big cached", Workload{Kind: WholeFile, FS: "ext4", Size: 1 << 30, Resident: 1}, env, RuleProfile, "mmap", 2, "mmap won"},
		{"big unknown", Workload{Kind: WholeFile, FS: "ext4", Size: 1 << 30, Resident: -1}, env, RuleProfile, "mmap", 2, ""},
		{"big cold", Workload{Kind: WholeFile, FS: "ext4", Size: 1 << 30, Resident: 0.5}, env, "big-uncached", "pread", 2, ""},
		{"direct", Workload{Kind: WholeFile, FS: "ext4", Size: 1 << 30, Resident: 1, Direct: true}, env, "direct", "io_uring", 1, ""},
		{"other fs", Workload{Kind: WholeFile, FS: "xfs", Size: 1 << 30, Resident: 1}, env, "big-cached", "pread", 2, ""},
		{"fs unknown", Workload{Kind: WholeFile, Size: 1 << 30, Resident: 1}, env, "big-cached", "pread", 2, ""},
		{"positioned", Workload{Kind: Positioned, FS: "ext4", Size: 1 << 30, Resident: 1}, env, "positioned-cached-mmap", "mmap", 2, ""},
		{"blocks", Workload{Kind: Blocks, FS: "ext4", Size: 1 << 30, Resident: 1}, env, RuleProfile, "io_uring", 1, "io_uring won"},
		{"blocks without io_uring", Workload{Kind: Blocks, FS: "ext4", Size: 1 << 30, Resident: 1}, noUring, "big-cached", "pread", 2,
			"the machine profile's rule would use io_uring but io_uring is not supported: " + noUringReason},
	} {
		got := Choose(c.w, c.env)
		if got.Rule != c.rule || got.Engine != c.engine || got.Workers != c.workers || !strings.Contains(got.Reason, c.inReason) {
			t.Errorf("%s: %+v; want rule %s, %s ×%d, a Reason with %q", c.name, got, c.rule, c.engine, c.workers, c.inReason)
		}
	}
	over := env
	over.Override = "read"
	if got := Choose(Workload{Kind: WholeFile, FS: "ext4", Size: 1 << 30, Resident: 1}, over); got.Engine != "read" || got.Rule != RuleOverride {
		t.Errorf("IOPATH_ENGINE=read with a profile: %+v", got)
	}
}

// Decide finds the filesystem itself when a profile rule may cover the
// file, and only then.
func TestDecideProfile(t *testing.T) {
	t.Setenv(EnvEngine, "")
	dir := t.TempDir()
	path := writeFile(t, dir, "f", 2<<20)
	typ, err := sys.StatfsType(dir)
	if err != nil {
		t.Fatal(err)
	}
	fs := machine.FSName(typ)
	p := &profile.Profile{Version: profile.Version, Filesystems: map[string]*profile.Section{
		fs: {Rules: []profile.Rule{{Kind: profile.WholeFile, MinSize: 1 << 20, MaxSize: 4 << 20, Engine: "readv", Workers: 3, Why: "readv won"}}},
	}}
	restore := profile.SetActive(profile.State{Profile: p, Status: "test"})
	defer restore()
	for _, size := range []int64{0, 2 << 20} {
		c := Decide(Workload{Kind: WholeFile, Path: path, Size: size, Resident: -1}, realEngines())
		if c.Rule != RuleProfile || c.Engine != "readv" || c.Workers != 3 || c.Reason != "machine profile on "+fs+": readv won" {
			t.Errorf("size %d given: %+v; want the profile's rule", size, c)
		}
	}
	if c := Decide(Workload{Kind: Blocks, Path: path, Resident: -1}, realEngines()); c.Rule == RuleProfile {
		t.Errorf("Scan (no rule for blocks): %+v", c)
	}
}
