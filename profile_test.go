package iopath

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/iopath/iopath/internal/machine"
	"github.com/iopath/iopath/internal/profile"
	"github.com/iopath/iopath/internal/sys"
	"github.com/iopath/iopath/internal/testenv"
)

// With a machine profile, ReadFile, Scan and Plan take its rules for the
// sizes and filesystem it covers, say so in the Reason, and still return
// every byte; sizes it does not cover, and other filesystems, keep Auto's
// defaults. (TestMain turns the machine's own profile off.)
func TestMachineProfile(t *testing.T) {
	testenv.CheckFDs(t)
	dir := t.TempDir()
	typ, err := sys.StatfsType(dir)
	if err != nil {
		t.Fatal(err)
	}
	fs := machine.FSName(typ)
	small := content(48<<10, 3)
	mid := content(300<<10, 4)
	smallPath, midPath := writeFile(t, dir, small), writeFile(t, dir, mid)
	p := &profile.Profile{Version: profile.Version, Filesystems: map[string]*profile.Section{
		fs: {Rules: []profile.Rule{
			{Kind: profile.WholeFile, MinSize: 256 << 10, MaxSize: 1 << 20, Engine: "pread", Workers: 2, Why: "pread×2 won"},
			{Kind: profile.Blocks, MinSize: 256 << 10, MaxSize: 1 << 20, Engine: "mmap", Workers: 1, Why: "mmap×1 won"},
		}},
		"no-such-fs": {Rules: []profile.Rule{
			{Kind: profile.WholeFile, MinSize: 4 << 10, Engine: "mmap", Workers: 2, Why: "elsewhere"},
		}},
	}}
	restore := profile.SetActive(profile.State{Profile: p, Status: "test"})
	defer restore()

	for _, c := range []struct {
		access         Access
		path           string
		rule, engine   string
		workers        int
		reasonContains string
	}{
		{ForReadFile, midPath, "profile", "pread", 2, "machine profile on " + fs + ": pread×2 won"},
		{ForScan, midPath, "profile", "mmap", 1, "mmap×1 won"},
		// 48 KiB: under every rule of this filesystem (another's covers
		// it, which must not count).
		{ForReadFile, smallPath, ruleSmallFile, "read", 1, ""},
		{ForScan, smallPath, ruleSmallFile, "pread", 1, ""},
		// Positioned reads have no profile rules.
		{ForOpen, midPath, "", "", 0, ""},
	} {
		got, err := Plan(c.path, c.access)
		if err != nil {
			t.Fatalf("Plan %v: %v", c.access, err)
		}
		if c.access == ForOpen {
			if got.Rule == "profile" {
				t.Errorf("Open takes a profile rule: %+v", got)
			}
			continue
		}
		if got.Rule != c.rule || got.Engine != c.engine || got.Workers != c.workers || !strings.Contains(got.Reason, c.reasonContains) {
			t.Errorf("Plan(%s, %v) = %+v; want rule %s, %s ×%d, Reason with %q", c.path, c.access, got, c.rule, c.engine, c.workers, c.reasonContains)
		}
	}
	for path, want := range map[string][]byte{smallPath: small, midPath: mid} {
		b, err := ReadFile(path)
		if err != nil || !bytes.Equal(b, want) {
			t.Errorf("ReadFile %s with a profile: %d bytes, %v", path, len(b), err)
		}
		var mu sync.Mutex
		got := make([]byte, len(want))
		err = Scan(context.Background(), path, func(off int64, b []byte) error {
			mu.Lock()
			copy(got[off:], b)
			mu.Unlock()
			return nil
		})
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("Scan %s with a profile: %v", path, err)
		}
	}
}
